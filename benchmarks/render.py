"""A scratch track's cost: a 30-second ad of six voice lines, music and two effects.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.render [--runs 5] [--language th]

- cold: a process of its own per run, set up as a worker is at its start (Django, then
  the mix's libraries and eSpeak NG: that load is reported apart, time and memory),
  timing the render task's work for a combination not rendered before: six lines
  synthesised, the mix, loudness, Ogg/Opus and WAV encoded and stored;
  with the real-time factor of the synthesis (seconds of speech made per second of
  synthesis; the library's start is in the render's time, not in this) and the
  process's peak resident memory before and after (``ru_maxrss``).
- cached: ``POST /api/ads/{id}/renders`` for a combination already made, through Django's
  test client, in one process: the request answered from the stored render.

Prints each figure's runs and median. Bars: cold < 2 s, cached < 50 ms, memory < 100 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks._bench_db import ROOT, bench_django, machine, write_results

DATABASE = "adstudio_bench_render"


def _ad(language: str):
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

    user, _ = get_user_model().objects.get_or_create(username="bench-render")
    ad = ad_create(
        owner=user, client="Spotify Premium family plan", language=language, duration_s=30
    )
    bank = lines_for(language)
    # Six lines of two sentences each: about 20-27 s of speech in a 30 s ad.
    lines = [bank.join([bank.calm[n], bank.calm[(n + 3) % len(bank.calm)]]) for n in range(6)]
    tracks = [
        VoiceTrack(
            id=f"track-{n}",
            voiceId="1",
            voiceName="Guide",
            text=line,
            playAfter="start" if n == 0 else f"track-{n - 1}",
            overlap=-0.2,
        )
        for n, line in enumerate(lines)
    ]
    draft_create(ad=ad, version=VoiceVersion(voiceTracks=tracks, estimatedDurationS=27.0))
    draft_create(
        ad=ad,
        version=MusicVersion(musicPrompt="Warm pad at 96 bpm", musicProvider="loudly", duration=30),
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


def cold_child(language: str) -> None:
    """One cold render in this process; prints its figures as JSON."""
    bench_django(DATABASE)
    from renders.making import render_make
    from renders.models import Render
    from renders.services import versions_of
    from renders.tasks import _load_audio_at_worker_start

    # What a worker does at its start (renders.tasks), timed apart from the render.
    started, at_start_kb = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _load_audio_at_worker_start()
    load_s = time.perf_counter() - started
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ad, user = _ad(language)
    render = Render.objects.create(ad=ad, requested_by=user, **versions_of(ad))
    started = time.perf_counter()
    made = render_make(render.pk)
    seconds = time.perf_counter() - started
    after_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "render_s": seconds,
                "real_time_factor": made.timeline["synthesisRealTimeFactor"],
                "status": made.status,
                "load_s": load_s,
                "load_mb": (before_kb - at_start_kb) / 1024,
                "rss_before_mb": before_kb / 1024,
                "rss_after_mb": after_kb / 1024,
            }
        )
    )


def cached(language: str, runs: int) -> list[float]:
    from django.test.utils import setup_test_environment
    from rest_framework.test import APIClient

    from accounts.services import token_create
    from renders.making import render_make
    from renders.models import Render
    from renders.services import versions_of

    setup_test_environment()
    ad, user = _ad(language)
    render = Render.objects.create(ad=ad, requested_by=user, **versions_of(ad))
    render_make(render.pk)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = client.post(f"/api/ads/{ad.pk}/renders", {}, format="json")
        times.append(time.perf_counter() - started)
        assert answer.status_code == 202 and answer.json()["status"] == "done", answer.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--language", default="th")
    parser.add_argument("--cold-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)  # the cached check renders in-process
    media = tempfile.mkdtemp(prefix="bench-render-")
    os.environ.setdefault("MEDIA_ROOT", media)
    if args.cold_child:
        cold_child(args.language)
        return
    colds = []
    for _ in range(args.runs):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.render",
                "--cold-child",
                "--language",
                args.language,
            ],
            cwd=ROOT,
            env=os.environ,
            capture_output=True,
            text=True,
            check=True,
        )
        colds.append(json.loads(done.stdout.strip().splitlines()[-1]))
    bench_django(DATABASE)
    warm = cached(args.language, args.runs * 10)
    figures = {
        "cold_render_s": [round(c["render_s"], 3) for c in colds],
        "cold_render_median_s": round(statistics.median(c["render_s"] for c in colds), 3),
        "synthesis_real_time_factor": [c["real_time_factor"] for c in colds],
        "worker_start_load_s": [round(c["load_s"], 3) for c in colds],
        "worker_start_load_mb": [round(c["load_mb"], 1) for c in colds],
        "rss_growth_mb": [round(c["rss_after_mb"] - c["rss_before_mb"], 1) for c in colds],
        "rss_peak_mb": [round(c["rss_after_mb"], 1) for c in colds],
        "cached_post_median_ms": round(statistics.median(warm) * 1000, 2),
        "cached_post_p95_ms": round(sorted(warm)[int(0.95 * len(warm)) - 1] * 1000, 2),
        "language": args.language,
        "machine": machine(),
    }
    for name, value in figures.items():
        if name != "machine":
            print(f"{name}: {value}")
    write_results("render", figures)


if __name__ == "__main__":
    main()
