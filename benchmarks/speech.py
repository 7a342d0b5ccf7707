"""A render with its cast voices read by a speech provider: a 30-second ad of six lines,
music and two effects, each line read by a fake of the provider over real HTTP that takes
300 ms to answer.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.speech [--runs 5] [--delay 0.3]

For each provider with a fake in ``testbed/`` (OpenAI, Azure, ElevenLabs), in one process
set up as a worker is at its start (the mix's libraries and the adapter loaded):

- render_s: the render task's work for lines never read before (new text each run): six
  lines read at once (``ADSTUDIO_SPEECH_CONCURRENCY``), the mix, loudness, the files
  encoded and stored; median of ``--runs``.
- requests on re-render: the same voices with the music changed, the provider's requests
  counted (0: every line comes from the cache).
- estimate = billed: the estimate before the render (``render_quote``) against what the
  render was billed (characters and dollars), for every run.

Bar: render < 1.5 s at 300 ms a request; 0 requests on re-render; the estimate equal to
the billed characters for every provider.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from benchmarks._bench_db import bench_django, machine, write_results

DATABASE = "adstudio_bench_speech"


@dataclass(frozen=True)
class Provider:
    name: str
    voice_id: str  # a voice the fake knows
    language: str
    locale: str = ""


PROVIDERS = (
    Provider("openai", "coral", "en"),
    Provider("azure", "th-TH-PremwadeeNeural", "th", "th-TH"),
    Provider("elevenlabs", "21m00Tcm4TlvDq8ikWAM", "en"),
)


def _fake(name: str):
    """The provider's fake server, and ``ADSTUDIO_SPEECH_PROVIDERS`` pointing at it."""
    if name == "openai":
        from testbed.fake_openai_speech import FakeOpenAISpeechServer

        server = FakeOpenAISpeechServer().start()
        return server, server.settings()
    if name == "azure":
        from testbed.fake_azure_speech import FakeAzureSpeechServer

        server = FakeAzureSpeechServer().start()
        return server, server.settings()
    from testbed.fake_elevenlabs import FakeElevenLabsServer

    server = FakeElevenLabsServer().start()
    return server, server.provider_settings()


def _ad(provider: Provider, run: int):
    """A 30 s ad of six lines cast to the provider's voice, text new for ``run``."""
    from django.contrib.auth import get_user_model

    from drafts.payloads import (
        MusicVersion,
        SfxPlacement,
        SfxVersion,
        SoundFxPrompt,
        VoiceTrack,
        VoiceVersion,
    )
    from drafts.services import ad_create, draft_create
    from providers.demo_lines import lines_for
    from voices.models import Voice

    user, _ = get_user_model().objects.get_or_create(username="bench-speech")
    voice, _ = Voice.objects.get_or_create(
        provider=provider.name,
        provider_voice_id=provider.voice_id,
        defaults={
            "name": provider.voice_id,
            "language": provider.language,
            "locale": provider.locale,
            "gender": "female",
            "approved": True,
        },
    )
    ad = ad_create(owner=user, client="Corner Market", language=provider.language, duration_s=30)
    bank = lines_for(provider.language)
    stamp = f"{time.time_ns()}-{run}"  # never read before: nothing comes from the cache
    lines = [f"{bank.calm[n % len(bank.calm)]} {stamp[-6:]}{n}" for n in range(6)]
    tracks = [
        VoiceTrack(
            id=f"track-{n}",
            voiceId=str(voice.pk),
            voiceName=voice.name,
            text=line,
            playAfter="start" if n == 0 else f"track-{n - 1}",
            overlap=-0.2,
        )
        for n, line in enumerate(lines)
    ]
    draft_create(ad=ad, version=VoiceVersion(voiceTracks=tracks, estimatedDurationS=27.0))
    for bpm in (96, 120):
        draft_create(
            ad=ad,
            version=MusicVersion(
                musicPrompt=f"Warm pad at {bpm} bpm", musicProvider="loudly", duration=30
            ),
        )
    draft_create(
        ad=ad,
        version=SfxVersion(
            soundFxPrompts=[
                SoundFxPrompt(
                    description="chime", placement=SfxPlacement(type="start"), duration=1.5
                ),
                SoundFxPrompt(
                    description="cheer", placement=SfxPlacement(type="end"), duration=2.0
                ),
            ]
        ),
    )
    return ad, user


def measure(provider: Provider, runs: int, delay: float) -> dict[str, Any]:
    from django.conf import settings

    from renders.making import render_make
    from renders.models import Render
    from renders.services import render_quote, versions_of

    server, entries = _fake(provider.name)
    settings.ADSTUDIO_SPEECH_PROVIDERS = entries
    server.delay = delay
    times, rerender_requests, agree = [], [], []
    try:
        for run in range(runs + 1):  # the first warms the adapter (its SDK, its pool)
            ad, user = _ad(provider, run)
            versions = versions_of(ad)
            first = {**versions, "music": ad.drafts.get(kind="music", version=1)}
            quote = render_quote(ad=ad, versions=first)
            render = Render.objects.create(ad=ad, requested_by=user, **first)
            asked = server.count
            started = time.perf_counter()
            made = render_make(render.pk)
            seconds = time.perf_counter() - started
            assert made.status == "done", made.error
            readers = {s.get("reader") for s in made.timeline["segments"] if s["kind"] == "voice"}
            assert readers == {provider.name}, made.timeline
            assert server.count - asked == 6, server.count - asked
            billed = made.timeline["speech"]
            again = Render.objects.create(ad=ad, requested_by=user, **versions)  # music v2
            asked = server.count
            assert render_make(again.pk).status == "done"
            if run:
                times.append(seconds)
                rerender_requests.append(server.count - asked)
                agree.append(
                    (quote.estimate.characters, str(quote.estimate.cost_usd))
                    == (billed["characters"], billed["costUsd"])
                )
    finally:
        server.stop()
    return {
        "render_s": [round(t, 3) for t in times],
        "render_median_s": round(statistics.median(times), 3),
        "rerender_requests": rerender_requests,
        "estimate_equals_billed": agree,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.3, help="seconds a request takes")
    args = parser.parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="bench-speech-"))
    bench_django(DATABASE)
    from django.conf import settings

    from renders.tasks import _load_audio_at_worker_start

    _load_audio_at_worker_start()
    figures: dict[str, Any] = {
        "delay_s": args.delay,
        "concurrency": settings.ADSTUDIO_SPEECH_CONCURRENCY,
    }
    for provider in PROVIDERS:
        figures[provider.name] = measure(provider, args.runs, args.delay)
        print(f"{provider.name}: {figures[provider.name]}")
    figures["machine"] = machine()
    write_results("speech", figures)


if __name__ == "__main__":
    main()
