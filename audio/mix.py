"""A scratch track of an ad: the guide voice of each track placed by the timeline, a music
bed that is plainly a placeholder (a soft pad pulsing at the prompt's bpm), each sound
effect as a tone or noise burst of its own, the music ducked under the speech; mastered
at 48 kHz to a loudness preset (``audio.mastering``: integrated loudness and a true-peak
ceiling) and delivered as broadcast WAV, Ogg/Opus, MP3 and a stem per kind
(``Mix.deliverables``).

Everything is measured from the audio made: each track's length is its synthesis's, so
the timeline returned is where the speech actually is. The same payloads give the same
samples.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from scipy.ndimage import maximum_filter1d, uniform_filter1d
from scipy.signal import resample_poly

from audio import bwf, encode, guide_voice, mastering
from audio.loudness import Measured
from audio.music import PLACEHOLDER, MusicProvider, placeholder_note
from audio.presets import DEFAULT, PRESETS, Preset
from audio.timeline import Timeline, timeline

MUSIC_LEVEL, DUCKED_LEVEL = 0.5, 0.15  # the bed's gain, and under speech
DUCK_RAMP_S = 0.08
RATE = 48_000  # the masters' rate: broadcast WAV's, and the only one Opus takes of ours
KINDS = ("voices", "music", "sfx")


class RenderError(ValueError):
    """The drafts cannot be rendered as they are (a track that follows no track...)."""


@dataclass
class Mix:
    samples: np.ndarray  # float32 mono, -1..1: the master
    sample_rate: int
    timeline: Timeline
    preset: Preset
    measured: Measured  # the master's loudness and true peak
    # Each kind rendered, at the master's loudness gain but before its limiter: they sum
    # to the master before limiting, sample for sample (within float rounding).
    stems: dict[str, np.ndarray]
    synthesis_s: float  # seconds of speech synthesised
    synthesis_wall_s: float  # seconds it took to synthesise them
    warnings: list[str]

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sample_rate

    @property
    def loudness_lufs(self) -> float:
        return round(self.measured.integrated_lufs, 2)

    @property
    def true_peak_dbtp(self) -> float:
        return round(self.measured.true_peak_dbtp, 2)

    def wav(self, *, description: str = "", originated: datetime | None = None) -> bytes:
        """Broadcast WAV, 48 kHz 24-bit, its bext chunk saying the loudness measured."""
        bext = bwf.Bext(
            description=description or "AdStudio scratch track",
            originated=originated or datetime.now(),
            measured=self.measured,
            coding_history=(
                f"A=PCM,F={self.sample_rate},W=24,M=mono,T=AdStudio {self.preset.name}\r\n"
            ),
        )
        return bwf.broadcast_wav(self.samples, self.sample_rate, bext)

    def ogg_opus(self) -> bytes:
        return encode.ogg_opus(self.samples, self.sample_rate)

    def mp3(self) -> bytes:
        return encode.mp3(self.samples, self.sample_rate)

    def deliverables(
        self, *, description: str = "", originated: datetime | None = None
    ) -> dict[str, bytes]:
        """Every file of the render by format: ``ogg``, ``wav``, ``mp3`` and a stem per
        kind rendered (``voices.wav``, ``music.wav``, ``sfx.wav``: float WAV). The Opus
        file, the longest to make, is encoded in a thread of its own while the others are
        (libsndfile's encoder runs without the GIL)."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="opus") as pool:
            opus = pool.submit(self.ogg_opus)
            files = {
                "wav": self.wav(description=description, originated=originated),
                "mp3": self.mp3(),
            }
            files = {"ogg": opus.result(), **files}
        for kind, stem in self.stems.items():
            files[f"{kind}.wav"] = encode.float_wav(stem, self.sample_rate)
        return files


def render(
    *,
    language: str,
    slot_s: float,
    voices: dict | None,
    music: dict | None,
    sfx: dict | None,
    preset: Preset = PRESETS[DEFAULT],
    cast: Mapping[str, Mapping[str, str]] | None = None,
    preroll_s: float = 0.0,
    gap_s: float = 0.0,
    progress: Callable[[], None] | None = None,
    read: Mapping[str, Reading] | None = None,
    music_maker: MusicProvider | None = None,
    music_made_by: str = "",
) -> Mix:
    """The scratch track of these payloads (any may be None: that kind is left out).
    ``cast`` gives each voice id's catalogue ``gender``, ``age``, ``provider`` and
    ``provider_voice_id`` (its guide voice);
    ``read`` the tracks already read by their cast voice, by track id (the others are
    read by the guide voice); ``music_maker`` the bed's maker (a ``MadeBed`` a provider
    composed; the placeholder when None) and ``music_made_by`` what the timeline says of it;
    ``preroll_s`` and ``gap_s`` are the timeline's.
    ``progress`` is called after each track the guide voice reads (the render's longest
    part): the caller's sign of life, which may raise to stop the render."""
    speech_rate = guide_voice.sample_rate()
    warnings: list[str] = []
    tracks = (voices or {}).get("voiceTracks", [])
    started = time.perf_counter()
    spoken: list[Reading] = []
    for track in tracks:
        given = (read or {}).get(str(track.get("id", "")))
        if given is not None:
            spoken.append(Reading(guide_voice.trimmed(given.samples), given.rate))
            continue
        voice = (cast or {}).get(str(track.get("voiceId", "")))
        spoken.append(Reading(_speech(track, language, voice, warnings), speech_rate))
        if progress is not None:
            progress()
    synthesis_wall_s = time.perf_counter() - started
    lengths = [len(reading.samples) / reading.rate for reading in spoken]
    try:
        placed = timeline(
            slot_s=slot_s,
            voices=voices,
            music=music,
            sfx=sfx,
            voice_lengths_s=lengths,
            preroll_s=preroll_s,
            gap_s=gap_s,
        )
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    total = round(placed.length_s * RATE)
    stems = {"voices": _voice_stem(placed, spoken, speech_rate, total)}
    stems["music"], stems["sfx"] = np.zeros(total, np.float32), np.zeros(total, np.float32)
    ducking = _ducking(stems["voices"], RATE)
    maker = music_maker or PLACEHOLDER
    made_by = music_made_by or placeholder_note(str((music or {}).get("musicProvider", "")))
    placed = replace(
        placed,
        segments=[replace(s, made_by=made_by) if s.kind == "music" else s for s in placed.segments],
    )
    for segment in placed.segments:
        start, end = round(segment.start_s * RATE), round(segment.end_s * RATE)
        if segment.kind == "music":
            bed = maker.bed(
                prompt=str((music or {}).get("musicPrompt", "")), count=end - start, rate=RATE
            )
            stems["music"][start:end] += bed * ducking[start:end]
        elif segment.kind == "sfx":
            stems["sfx"][start:end] += _effect(segment.label, end - start, RATE)
    present = dict(zip(KINDS, (voices, music, sfx), strict=True))
    stems = {kind: stem for kind, stem in stems.items() if present[kind] is not None}
    del ducking
    premaster = np.zeros(total, np.float32)  # the stems' sum, added in place: one array
    for stem in stems.values():
        premaster += stem
    mastered = mastering.master(premaster, RATE, preset)
    gain = np.float32(10 ** (mastered.gain_db / 20)) if np.isfinite(mastered.gain_db) else 1
    return Mix(
        samples=mastered.samples,
        sample_rate=RATE,
        timeline=placed,
        preset=preset,
        measured=mastered.measured,
        stems={kind: (stem * gain).astype(np.float32) for kind, stem in stems.items()},
        # The guide voice's speech alone: the lines a provider read took no synthesis here.
        synthesis_s=sum(
            length
            for length, track in zip(lengths, tracks, strict=True)
            if str(track.get("id", "")) not in (read or {})
        ),
        synthesis_wall_s=synthesis_wall_s,
        warnings=placed.warnings + warnings,
    )


@dataclass(frozen=True)
class Reading:
    """A voice track as read: float32 samples in -1..1 at ``rate``."""

    samples: np.ndarray
    rate: int


def _voice_stem(placed: Timeline, spoken: list[Reading], guide_rate: int, total: int):
    """The voice tracks placed where the timeline puts them, at ``RATE``: the guide
    voice's placed at its own rate and resampled once (as before any track was read by a
    provider: the same samples), each provider's resampled on its own and added."""
    voice_segments = [s for s in placed.segments if s.kind == "voice"]
    by_guide = [
        (round(segment.start_s * guide_rate), reading.samples)
        for segment, reading in zip(voice_segments, spoken, strict=True)
        if reading.rate == guide_rate
    ]
    # Each start rounds on its own (a 0.25 s gap is 5,512.5 samples): the track that ends
    # the timeline may end a sample after its rounded length, so the buffer holds them all.
    ends = [start + len(samples) for start, samples in by_guide]
    guide = np.zeros(max([round(placed.length_s * guide_rate), *ends]), dtype=np.float32)
    for start, samples in by_guide:
        guide[start : start + len(samples)] += samples
    others = np.zeros(total, dtype=np.float32)
    for segment, reading in zip(voice_segments, spoken, strict=True):
        if reading.rate != guide_rate:
            count = round(len(reading.samples) * RATE / reading.rate)
            samples = _resampled(reading.samples, reading.rate, count)
            start = round(segment.start_s * RATE)
            end = min(total, start + len(samples))
            others[start:end] += samples[: end - start]
    return _resampled(guide, guide_rate, total) + others


def _resampled(samples: np.ndarray, rate: int, count: int) -> np.ndarray:
    """``samples`` at ``RATE``, exactly ``count`` long (the timeline's length)."""
    common = np.gcd(rate, RATE)
    out = resample_poly(samples, RATE // common, rate // common).astype(np.float32)
    return np.pad(out, (0, max(0, count - len(out))))[:count]


def _guide_key(track: dict, voice: Mapping[str, str] | None) -> str:
    """What a cast voice's guide voice is chosen by: the catalogue's own name of the voice
    (its provider and that provider's voice id), so one voice reads at one pitch and one
    length in every database the catalogue was imported into; the draft's ``voiceId`` (a
    row's primary key there) only for a voice the catalogue does not have."""
    provider = str((voice or {}).get("provider") or "")
    provider_voice_id = str((voice or {}).get("provider_voice_id") or "")
    if provider and provider_voice_id:
        return f"{provider}:{provider_voice_id}"
    return str(track.get("voiceId", ""))


def _speech(
    track: dict, language: str, voice: Mapping[str, str] | None, warnings: list[str]
) -> np.ndarray:
    speed = float(track.get("speed", 1.0) or 1.0)
    guide = guide_voice.guide_voice(
        _guide_key(track, voice),
        gender=(voice or {}).get("gender", ""),
        age=(voice or {}).get("age", ""),
    )
    try:
        return guide_voice.synthesize(
            track.get("text", ""), language=language, speed=speed, voice=guide
        )
    except guide_voice.SpeechUnavailable:
        warnings.append(f"{track['id']}: no guide voice for {language!r}; read in English")
        return guide_voice.synthesize(
            track.get("text", ""), language="en", speed=speed, voice=guide
        )


def _ducking(voice: np.ndarray, rate: int) -> np.ndarray:
    """The music's gain over time: lower wherever the speech is, with short ramps."""
    talking = (np.abs(voice) > guide_voice.SILENCE).view(np.uint8)  # 1 a byte, not 4
    window = max(1, round(0.25 * rate))  # words' short pauses do not let the bed jump up
    held = maximum_filter1d(talking, size=window, mode="constant") > 0
    gain = np.where(held, np.float32(DUCKED_LEVEL), np.float32(MUSIC_LEVEL))
    ramp = max(1, round(DUCK_RAMP_S * rate))
    return uniform_filter1d(gain, size=ramp, mode="nearest")


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
