"""Draft versioning and activation."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import IntegrityError, connection

from adstudio.db.batch import Batch, WriteConflict
from drafts.models import Activation, ActivationSource, Draft, DraftStatus
from drafts.services import DraftNotInAd, LatestVersions, draft_activate, draft_create
from tests.support.versions import music, sfx, voices


@pytest.mark.django_db
def test_versions_count_up_per_kind_with_parent_links(ad):
    v1, _ = draft_create(ad=ad, version=music("calm"))
    v2, _ = draft_create(ad=ad, version=music("upbeat"))
    s1, _ = draft_create(ad=ad, version=sfx())
    assert (v1.version, v2.version, s1.version) == (1, 2, 1)
    assert v2.parent_id == v1.pk and v1.parent_id is None
    assert v2.label == "v2"


@pytest.mark.django_db
def test_a_replayed_tool_call_returns_its_first_draft(ad):
    run_id = uuid.uuid4()
    first, created = draft_create(
        ad=ad, version=music("take 1"), run_id=run_id, tool_call_id="call_a"
    )
    again, created_again = draft_create(
        ad=ad, version=music("take 2"), run_id=run_id, tool_call_id="call_a"
    )
    assert created and not created_again
    assert again.pk == first.pk
    assert Draft.objects.filter(ad=ad).count() == 1


@pytest.mark.django_db(transaction=True)  # the refused write ends its own transaction
def test_with_the_versions_known_a_replayed_call_is_found_by_its_write(ad):
    """A run that knows the ad's versions numbers a draft without reading them, so it
    cannot see that this tool call wrote its draft before: the write is refused by the
    unique tool call constraint (nothing written), and the call read again returns the
    first draft."""
    run_id = uuid.uuid4()
    known = LatestVersions({})
    batch = Batch()
    first, created = draft_create(
        ad=ad, version=music("take 1"), run_id=run_id, tool_call_id="1:a", batch=batch, latest=known
    )
    batch.write()
    assert created and first.version == 1 and known.of("music") == (first.pk, 1)

    stale = LatestVersions({})  # as a run resumed from before that write would know
    draft_create(
        ad=ad, version=music("take 2"), run_id=run_id, tool_call_id="1:a", batch=batch, latest=stale
    )
    with pytest.raises(WriteConflict):
        batch.write()
    assert batch  # kept for the caller, who discards the call's rows (the tool executor)
    batch.clear()
    again, created_again = draft_create(
        ad=ad, version=music("take 2"), run_id=run_id, tool_call_id="1:a", batch=batch
    )
    assert not created_again and again.pk == first.pk
    assert not batch and Draft.objects.filter(ad=ad).count() == 1


@pytest.mark.django_db
def test_activation_archives_the_previous_version(ad):
    v1, _ = draft_create(ad=ad, version=music())
    v2, _ = draft_create(ad=ad, version=music())
    voice_draft, _ = draft_create(ad=ad, version=voices())

    first = draft_activate(ad=ad, draft_id=v1.pk)
    assert first.changed and first.archived == ()

    second = draft_activate(ad=ad, draft_id=v2.pk)
    assert second.changed and [old.pk for old in second.archived] == [v1.pk]
    assert second.message == "Activated music v2 (archived v1)."

    statuses = dict(Draft.objects.filter(ad=ad, kind="music").values_list("version", "status"))
    assert statuses == {1: DraftStatus.ARCHIVED, 2: DraftStatus.ACTIVE}
    voice_draft.refresh_from_db()
    assert voice_draft.status == DraftStatus.DRAFT  # other kinds untouched


@pytest.mark.django_db
def test_activation_archives_older_drafts_and_leaves_newer_ones(ad):
    def music_draft() -> Draft:
        return draft_create(ad=ad, version=music())[0]

    def statuses() -> dict[int, str]:
        return dict(Draft.objects.filter(ad=ad, kind="music").values_list("version", "status"))

    v1, v2, _v3 = music_draft(), music_draft(), music_draft()
    assert [old.pk for old in draft_activate(ad=ad, draft_id=v2.pk).archived] == [v1.pk]
    # v1 was superseded before it went live; v3, newer than the live version, is still
    # to be reviewed
    assert statuses() == {1: "archived", 2: "active", 3: "draft"}

    v4 = music_draft()
    result = draft_activate(ad=ad, draft_id=v4.pk)

    assert [old.label for old in result.archived] == ["v2", "v3"]
    assert result.replaced.label == "v2"  # the version that was live
    assert result.message == "Activated music v4 (archived v2, v3)."
    assert statuses() == {1: "archived", 2: "archived", 3: "archived", 4: "active"}
    assert draft_activate(ad=ad, draft_id=v1.pk).message == "Activated music v1 (archived v4)."


@pytest.mark.django_db
def test_activating_the_active_version_is_a_no_op(ad):
    v1, _ = draft_create(ad=ad, version=music())
    draft_activate(ad=ad, draft_id=v1.pk)
    activated_at = Draft.objects.get(pk=v1.pk).activated_at

    result = draft_activate(ad=ad, draft_id=v1.pk)

    assert not result.changed
    assert result.message == "music v1 was already active."
    assert Draft.objects.get(pk=v1.pk).activated_at == activated_at


@pytest.mark.django_db
def test_a_draft_of_another_ad_cannot_be_activated_through_this_ad(ad, make_ad):
    other_ad = make_ad(title="Other")
    foreign, _ = draft_create(ad=other_ad, version=music())

    with pytest.raises(DraftNotInAd):
        draft_activate(ad=ad, draft_id=foreign.pk)

    foreign.refresh_from_db()
    assert foreign.status == DraftStatus.DRAFT


@pytest.mark.django_db(transaction=True)
def test_racing_activations_of_different_versions_leave_exactly_one_active(ad):
    """Two connections activate v1 and v2 at the same moment, many times over."""
    drafts = [draft_create(ad=ad, version=music())[0] for _ in range(2)]
    errors: list[BaseException] = []

    for _round in range(10):
        barrier = threading.Barrier(2)

        def activate(draft: Draft, barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait(timeout=10)
                draft_activate(ad=ad, draft_id=draft.pk)
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=activate, args=(d,)) for d in drafts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        assert not errors
        active = Draft.objects.filter(ad=ad, kind="music", status=DraftStatus.ACTIVE)
        assert active.count() == 1
        # the record agrees with the drafts: the latest activation is of the active one
        assert Activation.objects.filter(ad=ad).first().draft_id == active.get().pk


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_number_versions_without_gaps(ad):
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        try:
            barrier.wait(timeout=10)
            draft_create(ad=ad, version=voices())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert not errors
    versions = sorted(Draft.objects.filter(ad=ad).values_list("version", flat=True))
    assert versions == list(range(1, 9))


@pytest.mark.django_db
def test_each_activation_is_recorded_with_who_what_and_which_version_it_replaced(ad, user):
    v1, _v2, v3 = (draft_create(ad=ad, version=music())[0] for _ in range(3))
    draft_activate(ad=ad, draft_id=v1.pk, by=user, source=ActivationSource.ADMIN)
    draft_activate(ad=ad, draft_id=v3.pk, source=ActivationSource.TERMINAL)
    draft_activate(ad=ad, draft_id=v3.pk, by=user)  # already active: nothing happened

    latest, first = Activation.objects.filter(ad=ad)
    assert (first.draft, first.replaced, first.archived_versions) == (v1, None, [])
    assert (first.user, first.source) == (user, "admin")
    assert (latest.draft, latest.replaced, latest.archived_versions) == (v3, v1, [1, 2])
    assert (latest.user, latest.source) == (None, "terminal")
    assert str(latest) == "music v3 (replaced v1)"


@pytest.mark.django_db
def test_an_activation_cannot_record_a_draft_replacing_itself(ad):
    v1, _ = draft_create(ad=ad, version=music())

    with pytest.raises(IntegrityError, match="activation_replaces_another"):
        Activation.objects.create(ad=ad, draft=v1, replaced=v1, source="api")
