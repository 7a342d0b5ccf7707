"""The renders' recovery sweep: a lost message sent again (and only a lost one), a dead
worker's render taken back, one that kills every worker failed with the reason, the files
no render names removed (counted in its log line and a metric), every judgement of time by
the database's clock."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone
from prometheus_client import REGISTRY

from drafts.services import draft_create
from renders.models import Render
from renders.recover import RENDER_MAX_RECLAIMS, render_files_prune, renders_recover
from renders.services import versions_of
from tests.support.versions import music, voices

pytestmark = pytest.mark.django_db(transaction=True)

RENDER_TASK = "renders.tasks.render_scratch_track"


@pytest.fixture
def make_render(make_ad):
    def make(**fields) -> Render:
        ad = make_ad(duration_s=5)
        draft_create(ad=ad, version=voices("สวัสดีครับ"))
        draft_create(ad=ad, version=music("warm pad", duration=5))
        return Render.objects.create(ad=ad, **versions_of(ad), **fields)

    return make


def ago(seconds: float):
    return Now() - timedelta(seconds=seconds)


def put(name: str) -> str:
    return default_storage.save(name, ContentFile(b"audio"))


def test_a_queued_render_whose_message_was_lost_is_sent_again(
    make_render, settings, tasks_executed
):
    lost = make_render(enqueued_at=ago(settings.ADSTUDIO_RENDER_STALE_AFTER + 1))
    never_sent = make_render(enqueued_at=None)  # the broker was down when it was asked for
    waiting = make_render(enqueued_at=ago(1))  # its message is still in the queue

    sent = renders_recover()

    assert set(sent) == {lost.pk, never_sent.pk}
    assert tasks_executed == [RENDER_TASK, RENDER_TASK]  # eager: made at once
    assert Render.objects.get(pk=lost.pk).status == "done"
    assert Render.objects.get(pk=never_sent.pk).status == "done"
    assert Render.objects.get(pk=waiting.pk).status == "queued"
    assert renders_recover() == []  # nothing sent twice


@pytest.fixture
def sends(monkeypatch) -> list:
    """The renders the sweep sends, recorded instead of run (eager tasks would run them
    inside the sweep)."""
    sent: list = []
    monkeypatch.setattr("renders.recover.render_enqueue", sent.append)
    return sent


def test_a_dead_workers_render_is_taken_back_and_its_files_removed(
    make_render, media, sends, metrics_on, caplog
):
    dead = make_render(status="rendering", claims=1, lease_expires_at=ago(1))
    alive = make_render(status="rendering", claims=1, lease_expires_at=ago(-30))
    left = [put(f"renders/{dead.pk}/1.ogg"), put(f"renders/{dead.pk}/1.wav.0a1b2c.part")]
    left += [put(f"renders/{dead.pk}/1.music.wav"), put(f"renders/{dead.pk}/1.mp3.3d4e5f.part")]
    kept = put(f"renders/{alive.pk}/1.ogg")  # a live claim's file, being written
    removed_before = REGISTRY.get_sample_value(
        "adstudio_render_files_removed_total", {"why": "stale_claim"}
    )

    with caplog.at_level(logging.INFO, logger="renders.recover"):
        assert renders_recover() == [dead.pk]

    dead.refresh_from_db()
    assert sends == [dead.pk]
    assert (dead.status, dead.reclaims, dead.claims) == ("queued", 1, 1)
    assert not any(default_storage.exists(name) for name in left)
    assert default_storage.exists(kept)
    assert Render.objects.get(pk=alive.pk).status == "rendering"
    assert "1 render(s) taken back from dead workers" in caplog.text
    assert "4 orphan file(s) removed" in caplog.text
    removed = REGISTRY.get_sample_value(
        "adstudio_render_files_removed_total", {"why": "stale_claim"}
    )
    assert removed == (removed_before or 0) + 4


def test_a_dead_claims_files_are_removed_once_the_sweep_commits(make_render, media, sends):
    """Storage calls wait for the sweep's commit: a slow bucket does not hold the sweep's
    transaction, and its lock, open."""
    dead = make_render(status="rendering", claims=2, lease_expires_at=ago(1))
    left = put(f"renders/{dead.pk}/2.ogg")

    with transaction.atomic():  # the sweep's transaction
        assert renders_recover() == [dead.pk]
        assert default_storage.exists(left)

    assert not default_storage.exists(left)
    assert Render.objects.get(pk=dead.pk).status == "queued"


def test_a_render_that_kills_every_worker_fails_saying_so(make_render, media, tasks_executed):
    doomed = make_render(
        status="rendering", claims=4, reclaims=RENDER_MAX_RECLAIMS, lease_expires_at=ago(1)
    )
    left = put(f"renders/{doomed.pk}/4.ogg")

    renders_recover()

    doomed.refresh_from_db()
    assert doomed.status == "failed" and tasks_executed == []
    assert doomed.error == (
        "Its worker stopped 4 times while rendering it (killed, or out of touch with the "
        "database past its lease)."
    )
    assert not default_storage.exists(left)


def test_leases_are_judged_by_the_databases_clock_not_the_hosts(
    make_render, monkeypatch, tasks_executed
):
    """A sweeping host whose clock runs an hour ahead takes no live render over."""
    live = make_render(status="rendering", claims=1, lease_expires_at=ago(-10))
    ahead = timezone.now() + timedelta(hours=1)
    monkeypatch.setattr("django.utils.timezone.now", lambda: ahead)

    assert renders_recover() == []
    assert Render.objects.get(pk=live.pk).status == "rendering"


def test_the_files_of_renders_that_are_gone_are_removed(make_render, media, metrics_on):
    made = make_render()
    gone = make_render()
    old = make_render()
    # made before per-render folders, and before mastering (renders' migration 0004 left
    # it failed, naming its files until it is made anew)
    Render.objects.filter(pk=old.pk).update(
        status="failed",
        error="Made before scratch tracks were mastered to a preset",
        audio=f"renders/{old.pk}.ogg",
        wav=f"renders/{old.pk}.wav",
    )
    kept = [
        put(f"renders/{made.pk}/1.ogg"),
        put(f"renders/{made.pk}/1.voices.wav"),
        put(f"renders/{old.pk}.ogg"),
        put(f"renders/{old.pk}.wav"),
        put("renders/README.txt"),  # not a render's: not ours to remove
    ]
    removed = [put(f"renders/{gone.pk}/1.ogg"), put(f"renders/{gone.pk}/2.wav")]
    removed += [put(f"renders/{gone.pk}/2.mp3"), put(f"renders/{gone.pk}/2.sfx.wav")]
    removed.append(put(f"renders/{gone.pk}.ogg"))
    gone.delete()

    assert render_files_prune() == 5

    assert all(default_storage.exists(name) for name in kept)
    assert not any(default_storage.exists(name) for name in removed)


def test_a_prune_before_the_first_render_finds_nothing_to_do(media, caplog):
    """A worker's first sweeps, on a disk no render has written to yet."""
    assert not (media / "renders").exists()

    assert render_files_prune() == 0
    assert "Traceback" not in caplog.text


def test_a_prune_with_storage_out_of_reach_waits_for_the_next(monkeypatch, caplog):
    def unreachable(name):
        raise ConnectionError("the bucket's endpoint is unreachable")

    monkeypatch.setattr("renders.files.default_storage.listdir", unreachable)

    with caplog.at_level(logging.WARNING, logger="renders.files"):
        assert render_files_prune() == 0
    assert "could not list the renders folder" in caplog.text
