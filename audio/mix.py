"""A scratch track of an ad: the guide voice of each track placed by the timeline, a music
bed that is plainly a placeholder (a soft pad pulsing at the prompt's bpm), each sound
effect as a tone or noise burst of its own, the music ducked under the speech, the whole
normalised to a loudness target (ITU-R BS.1770, pyloudnorm) and written as WAV or
Ogg/Opus (libsndfile, through soundfile).

Everything is measured from the audio made: each track's length is its synthesis's, so
the timeline returned is where the speech actually is.
"""

from __future__ import annotations

import hashlib
import io
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyloudnorm
import soundfile
from scipy.signal import resample_poly

from audio import speech
from audio.timeline import Timeline, timeline

DEFAULT_BPM = 100
MUSIC_LEVEL, DUCKED_LEVEL = 0.5, 0.15  # the bed's gain, and under speech
DUCK_RAMP_S = 0.08
OPUS_RATE = 48_000  # the only rates Opus takes are 8, 12, 16, 24 and 48 kHz


class RenderError(ValueError):
    """The drafts cannot be rendered as they are (a track that follows no track...)."""


@dataclass
class Mix:
    samples: np.ndarray  # float32 mono, -1..1
    sample_rate: int
    timeline: Timeline
    loudness_lufs: float  # measured after normalising
    synthesis_s: float  # seconds of speech synthesised
    synthesis_wall_s: float  # seconds it took to synthesise them
    warnings: list[str]

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sample_rate

    def wav(self) -> bytes:
        out = io.BytesIO()
        soundfile.write(out, self.samples, self.sample_rate, format="WAV", subtype="PCM_16")
        return out.getvalue()

    def ogg_opus(self) -> bytes:
        resampled = resample_poly(self.samples, OPUS_RATE, self.sample_rate).astype(np.float32)
        out = io.BytesIO()
        soundfile.write(out, resampled.clip(-1, 1), OPUS_RATE, format="OGG", subtype="OPUS")
        return out.getvalue()


def render(
    *,
    language: str,
    slot_s: float,
    voices: dict | None,
    music: dict | None,
    sfx: dict | None,
    loudness_lufs: float = -16.0,
    progress: Callable[[], None] | None = None,
) -> Mix:
    """The scratch track of these payloads (any may be None: that kind is left out).
    ``progress`` is called after each voice track is synthesised (the render's longest
    part): the caller's sign of life, which may raise to stop the render."""
    rate = speech.sample_rate()
    warnings: list[str] = []
    tracks = (voices or {}).get("voiceTracks", [])
    started = time.perf_counter()
    spoken = []
    for track in tracks:
        spoken.append(_speech(track, language, warnings))
        if progress is not None:
            progress()
    synthesis_wall_s = time.perf_counter() - started
    lengths = [len(samples) / rate for samples in spoken]
    try:
        placed = timeline(
            slot_s=slot_s, voices=voices, music=music, sfx=sfx, voice_lengths_s=lengths
        )
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    total = round(placed.length_s * rate)
    voice = np.zeros(total, dtype=np.float32)
    voice_segments = [s for s in placed.segments if s.kind == "voice"]
    for segment, samples in zip(voice_segments, spoken, strict=True):
        start = round(segment.start_s * rate)
        voice[start : start + len(samples)] += samples
    mixed = voice.copy()
    for segment in placed.segments:
        start, end = round(segment.start_s * rate), round(segment.end_s * rate)
        if segment.kind == "music":
            bed = _music_bed(end - start, rate, _bpm(segment.label))
            mixed[start:end] += bed * _ducking(voice, rate)[start:end]
        elif segment.kind == "sfx":
            mixed[start:end] += _effect(segment.label, end - start, rate)
    mixed = _normalised(mixed, rate, loudness_lufs)
    return Mix(
        samples=mixed.astype(np.float32),
        sample_rate=rate,
        timeline=placed,
        loudness_lufs=round(_loudness(mixed, rate), 2),
        synthesis_s=sum(lengths),
        synthesis_wall_s=synthesis_wall_s,
        warnings=placed.warnings + warnings,
    )


def _speech(track: dict, language: str, warnings: list[str]) -> np.ndarray:
    speed = float(track.get("speed", 1.0) or 1.0)
    try:
        return speech.synthesize(track.get("text", ""), language=language, speed=speed)
    except speech.SpeechUnavailable:
        warnings.append(f"{track['id']}: no guide voice for {language!r}; read in English")
        return speech.synthesize(track.get("text", ""), language="en", speed=speed)


LIMIT = 0.9  # above this a peak is bent down softly, never past 1.0


def _normalised(samples: np.ndarray, rate: int, target_lufs: float) -> np.ndarray:
    """``samples`` at ``target_lufs`` integrated, the peaks the gain pushes past ``LIMIT``
    bent down softly; a few passes, as the bending lowers the loudness a little."""
    for _ in range(4):
        level = _loudness(samples, rate)
        if not np.isfinite(level) or abs(level - target_lufs) < 0.05:
            break
        samples = _soft_limited(samples * np.float32(10 ** ((target_lufs - level) / 20)))
    return samples.astype(np.float32)


def _soft_limited(samples: np.ndarray) -> np.ndarray:
    size = np.abs(samples)
    over = size > LIMIT
    bent = LIMIT + (1 - LIMIT) * np.tanh((size[over] - LIMIT) / (1 - LIMIT))
    samples = samples.copy()
    samples[over] = np.sign(samples[over]) * bent
    return samples


def _loudness(samples: np.ndarray, rate: int) -> float:
    if len(samples) < rate * 0.4:  # BS.1770 gates over 400 ms blocks
        return float("-inf")
    return float(pyloudnorm.Meter(rate).integrated_loudness(samples.astype(np.float64)))


_BPM = re.compile(r"(\d{2,3})\s*bpm", re.IGNORECASE)


def _bpm(prompt: str) -> int:
    match = _BPM.search(prompt)
    return max(40, min(200, int(match.group(1)))) if match else DEFAULT_BPM


def _music_bed(count: int, rate: int, bpm: int) -> np.ndarray:
    """A soft minor-seventh pad whose level pulses on each beat: no one takes it for the
    music the ad will have."""
    t = np.arange(count, dtype=np.float32) / rate
    chord = sum(np.sin(2 * np.pi * f * t) for f in (220.0, 261.63, 329.63, 392.0)) / 4
    beat = (t * bpm / 60.0) % 1.0
    pulse = 0.6 + 0.4 * np.exp(-6.0 * beat)
    fade = np.minimum(1.0, np.minimum(t, (count / rate) - t) / 0.5)  # in and out over 0.5 s
    return (chord * pulse * np.clip(fade, 0.0, 1.0)).astype(np.float32)


def _ducking(voice: np.ndarray, rate: int) -> np.ndarray:
    """The music's gain over time: lower wherever the speech is, with short ramps."""
    talking = (np.abs(voice) > speech.SILENCE).astype(np.float32)
    window = max(1, round(0.25 * rate))  # words' short pauses do not let the bed jump up
    held = np.convolve(talking, np.ones(window, dtype=np.float32), mode="same") > 0
    gain = np.where(held, DUCKED_LEVEL, MUSIC_LEVEL).astype(np.float32)
    ramp = max(1, round(DUCK_RAMP_S * rate))
    return np.convolve(gain, np.ones(ramp, dtype=np.float32) / ramp, mode="same")


def _effect(description: str, count: int, rate: int) -> np.ndarray:
    """A placeholder of its own for each description: a decaying tone (its pitch from the
    description) or a noise burst, the same every time for the same words."""
    digest = hashlib.sha256(description.encode()).digest()
    t = np.arange(count, dtype=np.float32) / rate
    decay = np.exp(-3.0 * t / max(count / rate, 0.05))
    if digest[0] % 2:
        frequency = 440.0 * 2 ** ((digest[1] % 24) / 12)
        sound = np.sin(2 * np.pi * frequency * t)
    else:
        sound = np.random.default_rng(int.from_bytes(digest[:8])).uniform(-1, 1, count)
    return (0.6 * sound * decay).astype(np.float32)
