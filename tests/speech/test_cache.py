"""The speech and music caches pruned by age: what was kept more than its days ago is
removed (read, and billed, again next time), the rest stays, and a file a dead process
left half-written goes after an hour; a daily sweep in the workers runs it."""

from __future__ import annotations

import os
import time

import pytest

from adstudio import sweeps
from speech.cache import cache_prune

DAY = 86400


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def kept(media, name: str, *, age_s: float) -> str:
    path = media / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0\0" * 100)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return name


def files(media) -> set[str]:
    return {str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()}


def test_what_was_kept_past_its_days_goes_and_the_rest_stays(media):
    old_line = kept(media, "speech/ab/ab12.pcm", age_s=91 * DAY)
    new_line = kept(media, "speech/cd/cd34.pcm", age_s=89 * DAY)
    old_music = kept(media, "music/ef/ef56.wav", age_s=200 * DAY)
    dead_write = kept(media, "speech/ab/ab99.pcm.0a1b2c.part", age_s=2 * 3600)
    live_write = kept(media, "speech/ab/ab98.pcm.3d4e5f.part", age_s=60)
    render = kept(media, "renders/x/1.ogg", age_s=400 * DAY)  # not the cache's

    assert cache_prune(keep_days=90) == 3

    assert files(media) == {new_line, live_write, render}
    assert old_line not in files(media) and old_music not in files(media)
    assert dead_write not in files(media)


def test_kept_for_good_still_clears_dead_writes(media):
    line = kept(media, "speech/ab/ab12.pcm", age_s=1000 * DAY)
    kept(media, "music/ef/ef56.wav.0a1b2c.part", age_s=2 * 3600)

    assert cache_prune(keep_days=0) == 1

    assert files(media) == {line}


def test_an_empty_storage_prunes_nothing(media):
    assert cache_prune(keep_days=90) == 0


def test_the_workers_prune_it_daily(media, settings):
    sweep = sweeps._sweeps["speech-cache"]
    old = kept(media, "speech/ab/ab12.pcm", age_s=11 * DAY)
    settings.ADSTUDIO_SPEECH_CACHE_DAYS = 10

    sweep.run()

    assert sweep.interval == 86400.0 and old not in files(media)
