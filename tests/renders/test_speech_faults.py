"""A render whose lines are read by a speech provider, under a worker killed mid-reading,
with real processes: the worker dies while the provider is still answering, the sweep sends
the render again, and it ends done, with the lines already read taken from the cache and no
file in storage that nothing names."""

from __future__ import annotations

import pytest

from drafts.payloads import VoiceTrack, VoiceVersion
from drafts.services import draft_create
from renders.models import Render
from renders.services import render_request, versions_of
from tests.renders.test_faults import UNFINISHED, render_worker
from tests.support.versions import music
from tests.support.worker import database_url, wait_for
from voices.models import Voice

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

LINES = (
    "Fresh savings all week.",
    "Only at Corner Market.",
    "Open late, every day.",
    "Terms apply.",
)


@pytest.fixture
def ad(make_ad):
    coral = Voice.objects.create(
        provider="openai",
        provider_voice_id="coral",
        name="Coral",
        language="en",
        gender="neutral",
        approved=True,
    )
    ad = make_ad(language="en", duration_s=15)
    tracks = [
        VoiceTrack(
            id=f"track-{n}",
            voiceId=str(coral.pk),
            voiceName="Coral",
            text=text,
            playAfter="start" if n == 0 else f"track-{n - 1}",
            overlap=0,
        )
        for n, text in enumerate(LINES)
    ]
    draft_create(ad=ad, version=VoiceVersion(voiceTracks=tracks, estimatedDurationS=6.0))
    draft_create(ad=ad, version=music("warm pad at 90 bpm", duration=15))
    return ad


def test_a_render_survives_its_worker_killed_while_its_lines_are_read(
    ad, broker, broker_url, settings, tmp_path, fake_openai_speech
):
    media = tmp_path / "media"
    settings.MEDIA_ROOT = media
    fake_openai_speech.delay = 1.0  # each line a second: the kill lands mid-reading
    env = {
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": broker_url,
        "MEDIA_ROOT": str(media),
        "OPENAI_API_KEY": fake_openai_speech.api_key,
        "ADSTUDIO_OPENAI_SPEECH_BASE_URL": fake_openai_speech.base_url,
        "ADSTUDIO_SPEECH_CONCURRENCY": "2",
    }
    worker = render_worker(tmp_path, env)
    worker.start()
    try:
        render, _ = render_request(ad=ad, versions=versions_of(ad))
        wait_for(lambda: fake_openai_speech.count >= 2, what="the first lines asked for")
        # A line kept whole (its folder, or a ``.part`` being written, is not yet one).
        wait_for(lambda: any((media / "speech").rglob("*.pcm")), what="a line kept")
        worker.kill()
        asked_before_kill = fake_openai_speech.count
        stuck = Render.objects.get(pk=render.pk).status
        worker.start()
        wait_for(
            lambda: Render.objects.get(pk=render.pk).status not in UNFINISHED,
            timeout=60,
            what="the render to end",
        )
    finally:
        worker.kill()

    assert stuck in UNFINISHED  # the kill left it unfinished; the restarted worker ended it
    made = Render.objects.get(pk=render.pk)
    assert made.status == "done", (made.error, worker.log.read_text()[-3000:])
    readers = [s["readBy"] for s in made.timeline["segments"] if s["kind"] == "voice"]
    assert all(r.startswith("OpenAI") for r in readers), readers
    assert "OpenAI (cached)" in readers  # what was read before the kill was not read again
    read_in_all = {body["input"] for body in fake_openai_speech.bodies}
    assert read_in_all == set(LINES)
    assert fake_openai_speech.count < asked_before_kill + len(LINES)
    # Each line kept once, whole (a write the kill cut short is only ever a ``.part``).
    kept = [p for p in (media / "speech").rglob("*.pcm")]
    assert len(kept) == len(LINES) and all(p.stat().st_size % 2 == 0 for p in kept)
