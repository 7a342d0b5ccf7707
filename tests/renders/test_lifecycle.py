"""A render's lifecycle in the task, each way it can end: claimed with a token and a lease
by the database's clock; done only once its files are whole and its claim still holds;
failed with the error named; retried while the database is out of reach; and a task that
lost its claim writes nothing and leaves no file."""

from __future__ import annotations

import errno
import logging
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.db.models.functions import Now
from prometheus_client import REGISTRY

from audio import mix
from drafts.services import draft_create
from renders import making
from renders.making import TryAgain, render_attempt, render_claim, render_make
from renders.models import Render
from renders.recover import renders_recover
from renders.services import versions_of
from renders.tasks import render_scratch_track
from tests.support.versions import music, voices

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def render(make_ad):
    ad = make_ad(duration_s=5)
    draft_create(ad=ad, version=voices("สวัสดีครับ", "ครอบครัวของคุณ"))
    draft_create(ad=ad, version=music("warm pad at 90 bpm", duration=5))
    return Render.objects.create(ad=ad, **versions_of(ad))


def stored(media) -> list[str]:
    """Every file under the media folder, temporary ones included."""
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file())


def database_seconds(expression) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXTRACT(EPOCH FROM %s - now())", [expression])
        return float(cursor.fetchone()[0])


def test_a_claim_takes_a_token_and_a_lease_by_the_databases_clock(render, settings):
    claim = render_claim(render.pk)
    render.refresh_from_db()

    assert claim.token == 1 and render.claims == 1 and render.status == "rendering"
    lease_left = database_seconds(render.lease_expires_at)
    assert (
        settings.ADSTUDIO_RENDER_STALE_AFTER - 2
        < lease_left
        <= (settings.ADSTUDIO_RENDER_STALE_AFTER)
    )
    assert render_claim(render.pk) is None  # another delivery of the task: not its to make
    assert render_claim(render.pk, holder=7) is None  # a token that is not the latest
    assert render_claim(render.pk, holder=1).token == 1  # its own, taken back


def test_done_only_after_every_file_is_whole_under_the_claims_names(render, media):
    made = render_make(render.pk)

    assert made.status == "done" and made.claims == 1 and made.lease_expires_at is None
    folder = f"renders/{render.pk}"
    assert made.file_names() == {  # the mix in each format, a stem per kind it has
        "ogg": f"{folder}/1.ogg",
        "wav": f"{folder}/1.wav",
        "mp3": f"{folder}/1.mp3",
        "voices.wav": f"{folder}/1.voices.wav",
        "music.wav": f"{folder}/1.music.wav",
    }
    assert made.sfx_stem.name == ""  # no effects in this render
    assert stored(media) == sorted(made.file_names().values())
    assert made.finished_at >= made.started_at


def _taken_over(render_id) -> None:
    """What a sweep and another worker do to a render whose lease ran out."""
    Render.objects.filter(pk=render_id).update(lease_expires_at=Now() - timedelta(seconds=1))
    renders_recover()  # eager: the sent task would run here; it is stopped from doing so
    assert render_claim(render_id).token == 2


@pytest.fixture
def no_sending(monkeypatch):
    """The sweep's sends go nowhere: the test plays the other worker itself."""
    monkeypatch.setattr("renders.services.render_enqueue", lambda render_id: None)
    monkeypatch.setattr("renders.recover.render_enqueue", lambda render_id: None)


def test_a_task_that_lost_its_claim_mid_render_writes_nothing(
    render, media, monkeypatch, no_sending
):
    real = mix.render

    def slow_render(**kwargs):
        made = real(**kwargs)
        _taken_over(render.pk)  # while this task was mixing, its lease ran out
        return made

    monkeypatch.setattr(mix, "render", slow_render)

    assert render_make(render.pk) is None
    render.refresh_from_db()
    assert (render.status, render.claims, render.audio.name) == ("rendering", 2, "")
    assert stored(media) == []


def test_a_task_that_lost_its_claim_after_storing_removes_its_files(
    render, media, monkeypatch, no_sending
):
    real = making.files.write

    def write_then_lose(render_id, claim, audio):
        names = real(render_id, claim, audio)
        assert stored(media) == sorted(names.values())
        _taken_over(render_id)
        return names

    monkeypatch.setattr(making.files, "write", write_then_lose)

    assert render_make(render.pk) is None
    render.refresh_from_db()
    assert (render.status, render.claims, render.audio.name, render.wav.name) == (
        "rendering",
        2,
        "",
        "",
    )
    assert stored(media) == []  # the fenced write refused it; its files went with it


@pytest.mark.parametrize(
    "raised, error",
    [
        (mix.RenderError("track-3 follows track-9, which does not exist"), "track-3 follows"),
        (TypeError("unsupported operand"), "internal error (TypeError)"),
    ],
)
def test_a_render_that_cannot_be_made_fails_with_its_error_named(
    render, media, monkeypatch, raised, error
):
    def broken(**kwargs):
        raise raised

    monkeypatch.setattr(mix, "render", broken)

    failed = render_make(render.pk)

    assert failed.status == "failed" and error in failed.error
    assert failed.lease_expires_at is None and failed.finished_at is not None
    assert stored(media) == []


class DiskFills:
    """Chunks of which the second raises ENOSPC, as a write to a full disk does."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def chunks(self, chunk_size=None):
        yield self.data[: len(self.data) // 2]
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_fails_the_render_with_the_error_and_leaves_no_file(render, media, monkeypatch):
    from adstudio.file_storage import WholeFileSystemStorage

    real = WholeFileSystemStorage._save
    saved = []

    def fills_at_the_wav(self, name, content):
        if name.endswith(".wav"):
            content = DiskFills(content.read())
        saved.append(name)
        return real(self, name, content)

    monkeypatch.setattr(WholeFileSystemStorage, "_save", fills_at_the_wav)

    failed = render_make(render.pk)

    assert saved == [f"renders/{render.pk}/1.ogg", f"renders/{render.pk}/1.wav"]
    assert failed.status == "failed"
    assert failed.error == ("The audio could not be stored: [Errno 28] No space left on device")
    assert stored(media) == []  # the ogg stored first is removed; no half-written wav


def fenced_write(sql: str, params) -> bool:
    return sql.startswith('UPDATE "renders_render"') and "done" in (params or ())


def claim_read(sql: str, params) -> bool:
    return sql.startswith("SELECT") and 'FROM "renders_render"' in sql


@contextmanager
def database_down_for(statement, times: int):
    """The next ``times`` statements that ``statement(sql, params)`` picks fail as a lost
    connection does; the others run."""
    failures = []

    def wrapper(execute, sql, params, many, context):
        if statement(sql, params) and len(failures) < times:
            failures.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield failures


def test_the_database_lost_at_the_claim_is_tried_again(render):
    with database_down_for(claim_read, times=1), pytest.raises(TryAgain) as again:
        render_attempt(render.pk)

    assert again.value.holder is None
    render.refresh_from_db()
    assert render.status == "queued" and render.claims == 0


def test_the_database_lost_at_the_fenced_write_removes_the_files_and_keeps_the_claim(render, media):
    with database_down_for(fenced_write, times=1), pytest.raises(TryAgain) as again:
        render_attempt(render.pk)

    assert again.value.holder == 1
    assert stored(media) == []  # nothing the row could not name is left
    render.refresh_from_db()
    assert render.status == "rendering" and render.claims == 1

    made = render_attempt(render.pk, holder=again.value.holder)  # the task's next attempt

    assert made.status == "done" and made.claims == 1
    assert stored(media) == sorted(made.file_names().values()) and len(stored(media)) == 5


@pytest.fixture
def no_backoff(monkeypatch):
    monkeypatch.setattr("renders.making.RETRY_DELAYS_S", (0, 0, 0, 0, 0))


def test_the_task_retries_while_the_database_is_out_of_reach(render, media, no_backoff):
    with database_down_for(fenced_write, times=2) as failures:
        render_scratch_track.delay(str(render.pk))  # eager: its retries run at once

    render.refresh_from_db()
    assert len(failures) == 2 and render.status == "done" and render.claims == 1


def test_past_its_retries_the_task_leaves_the_render_to_the_sweep(
    render, media, caplog, no_backoff
):
    with (
        database_down_for(fenced_write, times=99),
        caplog.at_level(logging.WARNING, logger="renders.making"),
    ):
        render_scratch_track.delay(str(render.pk))

    render.refresh_from_db()
    assert render.status == "rendering" and render.lease_expires_at is not None
    assert stored(media) == []
    assert "the recovery sweep will send it again" in caplog.text
    assert render.claims == 1  # each retry took back its own claim, no other


def test_finished_renders_are_counted(render, metrics_on, monkeypatch, make_ad):
    before = REGISTRY.get_sample_value("adstudio_renders_finished_total", {"status": "done"})
    render_make(render.pk)

    after = REGISTRY.get_sample_value("adstudio_renders_finished_total", {"status": "done"})
    assert after == (before or 0) + 1


def test_a_render_longer_than_its_lease_keeps_its_claim(
    make_ad, media, settings, monkeypatch, no_sending
):
    """A long ad on a busy worker: its synthesis alone outlasts the lease. The lease is
    renewed as the tracks are made, so a sweep in the middle of the last one finds it
    alive and takes nothing back."""
    from audio import guide_voice

    settings.ADSTUDIO_RENDER_STALE_AFTER = 2
    ad = make_ad(duration_s=30)
    draft_create(ad=ad, version=voices(*["สวัสดีครับ"] * 6))
    render = Render.objects.create(ad=ad, **versions_of(ad))
    real, made_so_far, taken_back = guide_voice.synthesize, [], []

    def slow(*args, **kwargs):
        time.sleep(0.7)  # six tracks: 4.2 s of synthesis against a 2 s lease
        made_so_far.append(1)
        if len(made_so_far) == 6:
            taken_back.extend(renders_recover())
        return real(*args, **kwargs)

    monkeypatch.setattr(guide_voice, "synthesize", slow)

    made = render_make(render.pk)

    assert len(made_so_far) == 6 and taken_back == []
    assert (made.status, made.claims, made.reclaims) == ("done", 1, 0)
