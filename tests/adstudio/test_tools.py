"""What a tool call is handed (``adstudio.tools``) is described by protocols, so the
project package names no app: the apps' classes must still have what the protocols
name, with the same method signatures, or a tool would fail at its first call."""

from __future__ import annotations

import inspect
import uuid

import pytest

from adstudio.tools import DraftVersions, StagedDraft, ToolAd, ToolContext
from drafts.models import Ad, Draft, DraftKind
from drafts.services import LatestVersions


def _methods(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


def test_an_ad_is_what_a_tool_call_is_handed():
    ad = Ad(language="th", duration_s=30)
    assert isinstance(ad, ToolAd)
    assert ToolContext(ad=ad).ad is ad
    # the members' types, as the model's fields give them
    assert isinstance(ad.pk, uuid.UUID)
    assert Ad._meta.get_field("duration_s").get_internal_type() == "PositiveSmallIntegerField"
    assert Ad._meta.get_field("language").get_internal_type() == "CharField"


def test_a_draft_is_what_the_latest_versions_record():
    draft = Draft(kind=DraftKind.MUSIC, version=2)
    assert isinstance(draft, StagedDraft)
    versions = LatestVersions({})
    versions.staged(draft)
    assert versions.of(DraftKind.MUSIC) == (draft.pk, 2)


def test_the_latest_versions_are_the_draft_versions_a_tool_call_is_handed():
    versions = LatestVersions({})
    assert isinstance(versions, DraftVersions)
    for name, signature in _methods(DraftVersions).items():
        assert inspect.signature(getattr(LatestVersions, name)) == signature, name


@pytest.mark.parametrize("missing", ["of", "staged", "forget"])
def test_a_holder_without_a_method_is_not_draft_versions(missing):
    """The check above can fail: drop one method and the object is not one."""
    members = {name: (lambda *args: None) for name in ("of", "staged", "forget")}
    del members[missing]
    assert not isinstance(type("Partial", (), members)(), DraftVersions)
