"""Each invariant of ads and drafts is enforced by the database, not only by Python."""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, transaction

from drafts.models import Draft, DraftKind, DraftStatus
from drafts.payloads import payload_of
from tests.support.versions import version_of

pytestmark = pytest.mark.django_db


def _draft(ad, **overrides) -> Draft:
    fields = {"ad": ad, "kind": DraftKind.MUSIC, "version": 1}
    fields.update(overrides)
    if "payload" not in fields:
        kind = fields["kind"] if fields["kind"] in DraftKind.values else DraftKind.MUSIC
        fields["payload"] = payload_of(version_of(kind))
    return Draft.objects.create(**fields)


def _refused(constraint: str, make) -> None:
    with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
        make()
    assert constraint in str(excinfo.value)


def test_version_is_unique_per_ad_and_kind(ad, make_ad):
    _draft(ad, version=1)
    _refused("draft_unique_version_per_kind", lambda: _draft(ad, version=1))
    # The same number is fine for another kind or another ad.
    _draft(ad, version=1, kind=DraftKind.SFX)
    _draft(make_ad(), version=1)
    assert Draft.objects.filter(version=1).count() == 3


def test_at_most_one_active_per_ad_and_kind(ad, make_ad):
    _draft(ad, version=1, status=DraftStatus.ACTIVE)
    _refused(
        "draft_one_active_per_kind",
        lambda: _draft(ad, version=2, status=DraftStatus.ACTIVE),
    )
    _draft(ad, version=2, status=DraftStatus.ARCHIVED)
    _draft(ad, version=3, status=DraftStatus.DRAFT)
    _draft(ad, version=1, kind=DraftKind.VOICES, status=DraftStatus.ACTIVE)
    _draft(make_ad(), version=1, status=DraftStatus.ACTIVE)
    assert Draft.objects.filter(status=DraftStatus.ACTIVE).count() == 3


def test_a_tool_call_of_a_run_writes_one_draft(ad):
    run_id = uuid.uuid4()
    _draft(ad, version=1, run_id=run_id, tool_call_id="call_1")
    _refused(
        "draft_unique_tool_call_per_run",
        lambda: _draft(ad, version=2, run_id=run_id, tool_call_id="call_1"),
    )
    _draft(ad, version=2, run_id=run_id, tool_call_id="call_2")
    _draft(ad, version=3, run_id=uuid.uuid4(), tool_call_id="call_1")


def test_a_run_draft_names_its_tool_call(ad):
    _refused(
        "draft_run_has_tool_call_id",
        lambda: _draft(ad, version=1, run_id=uuid.uuid4(), tool_call_id=""),
    )


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("voices", {"tracks": [{"voiceId": "1", "text": "Hi"}]}),  # the shape before v3
        ("music", {"prompt": "calm", "provider": "loudly", "duration": 30}),
        ("sfx", {"prompts": [{"description": "whoosh"}]}),
        ("music", {"voiceTracks": []}),  # another kind's shape
        ("voices", {}),
        ("sfx", []),
    ],
)
def test_payload_is_in_its_kinds_version_shape(ad, kind, payload):
    _refused("draft_payload_in_version_shape", lambda: _draft(ad, kind=kind, payload=payload))


@pytest.mark.parametrize("version", [0])
def test_version_must_be_positive(ad, version):
    _refused("draft_version_positive", lambda: _draft(ad, version=version))


@pytest.mark.parametrize(
    ("field", "value", "constraint"),
    [
        ("kind", "video", "draft_kind_valid"),
        ("status", "live", "draft_status_valid"),
        ("created_by", "robot", "draft_created_by_valid"),
    ],
)
def test_enums_are_checked(ad, field, value, constraint):
    _refused(constraint, lambda: _draft(ad, **{field: value}))


@pytest.mark.parametrize("duration", [0, 4, 121, 3600])
def test_ad_duration_in_range(make_ad, duration):
    _refused("ad_duration_in_range", lambda: make_ad(duration_s=duration))


def test_ad_needs_a_language(make_ad):
    _refused("ad_language_not_empty", lambda: make_ad(language=""))
