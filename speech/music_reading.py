"""An ad's music composed by the provider its draft names (``musicProvider``) when that
provider is configured (``speech.music_registry``), kept in storage by what makes it the
same track so a change of the voices composes nothing again, with the providers' retry
policy; else the placeholder bed, and the timeline says why. Composed while the render's
lines are read (``read_for_render``): a track takes seconds to make.

A composition costs what the provider's licence says; there is no price table for music,
so the estimate and the cap count speech only.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from providers.base import ProviderError
from providers.retry import RetryPolicy
from speech import cache, music_registry
from speech.reading import (
    Line,
    LineRead,
    SpeechWatch,
    Stopped,
    gather,
    read_line,
    unwatched,
    with_retries,
)

logger = logging.getLogger(__name__)

FOLDER = "music"
# The design's music providers, as the review desk names them.
LABELS = {"mubert": "Mubert", "loudly": "Loudly"}


@dataclass(frozen=True)
class MusicRead:
    """The music as made: ``audio`` (16-bit mono PCM at ``sample_rate``) when a provider
    composed it, empty for the placeholder; ``made_by`` what the timeline says of it."""

    made_by: str
    audio: bytes = b""
    sample_rate: int = 0
    cached: bool = False
    warning: str = ""


def read_music(
    music: Mapping[str, Any] | None,
    *,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], object] = time.sleep,
    stopped: threading.Event | None = None,
) -> MusicRead | None:
    """The draft's music composed, from the cache or its provider; None without music."""
    if music is None:
        return None
    name = str(music.get("musicProvider", ""))
    label = LABELS.get(name, name or "no provider")
    if name not in music_registry.MAKERS:
        return MusicRead(f"placeholder bed: {label} not connected")
    maker = music_registry.music_maker(name)
    if maker is None:
        return MusicRead(f"placeholder bed: {label} not configured")
    prompt, duration_s = str(music.get("musicPrompt", "")), int(music.get("duration") or 0)
    kept = cache.cached_file(_cache_name(name, prompt, duration_s))
    if kept is not None:
        return _from_wav(kept, label, cached=True)
    try:
        track = with_retries(
            lambda: maker.compose(prompt=prompt, duration_s=duration_s),
            policy=policy or RetryPolicy.from_settings(),
            sleep=sleep if stopped is None else stopped.wait,
            stopped=stopped,
        )
    except Stopped:
        return MusicRead(f"placeholder bed: the render stopped before {label} composed")
    except ProviderError as error:
        logger.warning("%s could not compose the music: %s", label, error)
        return MusicRead(
            f"placeholder bed: {label} failed",
            warning=f"music: the placeholder bed, {label} failed ({error.code}: {error})",
        )
    wav = _wav(track.audio, track.sample_rate)
    cache.store_file(_cache_name(name, prompt, duration_s), wav)
    return MusicRead(label, audio=track.audio, sample_rate=track.sample_rate)


def composes(music: Mapping[str, Any] | None) -> bool:
    """Whether rendering ``music`` now would have its provider compose it (billed by the
    provider's licence): the provider configured and the track not kept."""
    if music is None:
        return False
    name = str(music.get("musicProvider", ""))
    if not music_registry.is_configured(name):
        return False
    prompt, duration_s = str(music.get("musicPrompt", "")), int(music.get("duration") or 0)
    return not cache.is_kept(_cache_name(name, prompt, duration_s))


def read_for_render(
    lines: list[Line],
    music: Mapping[str, Any] | None,
    *,
    concurrency: int,
    progress: Callable[[], None] | None = None,
    watch: SpeechWatch = unwatched,
    every_s: float = 1.0,
) -> tuple[list[LineRead], MusicRead | None]:
    """A render's lines read (at most ``concurrency`` at once; one more once the music is
    made) and its music composed, all at the same time; ``progress`` as
    ``speech.reading.gather`` calls it."""
    if music is None:
        jobs = [functools.partial(read_line, line, watch=watch) for line in lines]
        return gather(jobs, workers=concurrency, progress=progress, every_s=every_s), None
    # The music first (the longest) on a thread of its own: the lines keep their bound.
    jobs = [functools.partial(read_music, music)]
    jobs += [functools.partial(read_line, line, watch=watch) for line in lines]
    made = gather(jobs, workers=concurrency + 1, progress=progress, every_s=every_s)
    return made[1:], made[0]


def _cache_name(provider: str, prompt: str, duration_s: int) -> str:
    canonical = json.dumps(
        {"provider": provider, "prompt": prompt, "duration": duration_s, "format": "wav_s16"},
        sort_keys=True,
        ensure_ascii=False,
    )
    key = hashlib.sha256(canonical.encode()).hexdigest()
    return f"{FOLDER}/{key[:2]}/{key}.wav"


def _wav(audio: bytes, rate: int) -> bytes:
    import numpy as np
    import soundfile

    out = io.BytesIO()
    samples = np.frombuffer(audio[: len(audio) - len(audio) % 2], dtype="<i2")
    soundfile.write(out, samples, rate, format="WAV", subtype="PCM_16")
    return out.getvalue()


def _from_wav(data: bytes, label: str, *, cached: bool) -> MusicRead:
    import soundfile

    samples, rate = soundfile.read(io.BytesIO(data), dtype="int16")
    return MusicRead(
        f"{label} (cached)" if cached else label,
        audio=samples.astype("<i2").tobytes(),
        sample_rate=rate,
        cached=cached,
    )
