"""Where each part of an ad plays, as docs/api.md defines it ("Draft payloads"): a voice
track starts when the track it follows ends, minus its overlap (a negative overlap is a
gap), or at 0 after "start"; the music from 0 for its duration; an effect at the start,
ending with the ad, or when a voice track ends. Given each track's length (measured from
its synthesis, or estimated), the arithmetic is this module's alone.

A render also leaves a pre-roll before the speech and a gap between speakers where the
script gives neither an overlap nor a gap (``preroll_s``, ``gap_s``); an estimate passes
neither and places the script as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adstudio.speaking_time import spoken_seconds


@dataclass(frozen=True)
class Segment:
    kind: str  # "voice", "music" or "sfx"
    ref: str  # "track-0", "music", "sfx-0"
    start_s: float
    end_s: float
    label: str = ""
    under_speech_s: float = 0.0  # an effect's seconds that play while someone speaks
    made_by: str = ""  # the music's maker, as the review desk says it (audio.music)


@dataclass(frozen=True)
class Join:
    """How a track meets the one it follows: overlapping (seconds > 0) or after a gap."""

    after: str
    track: str
    overlap_s: float


@dataclass(frozen=True)
class Timeline:
    slot_s: float
    length_s: float  # the slot, or longer when something ends after it
    segments: list[Segment]
    joins: list[Join] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def speech_end_s(self) -> float:
        return max((s.end_s for s in self.segments if s.kind == "voice"), default=0.0)

    def as_json(self) -> dict[str, Any]:
        return {
            "slotS": self.slot_s,
            "lengthS": self.length_s,
            "speechEndS": round(self.speech_end_s, 3),
            "segments": [_segment_json(s) for s in self.segments],
            "joins": [
                {"after": j.after, "track": j.track, "overlapS": round(j.overlap_s, 3)}
                for j in self.joins
            ],
            "warnings": self.warnings,
        }


def _segment_json(segment: Segment) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "kind": segment.kind,
        "ref": segment.ref,
        "startS": round(segment.start_s, 3),
        "endS": round(segment.end_s, 3),
        "label": segment.label,
    }
    if segment.kind == "sfx":  # the review desk and the scorers: an effect over a voice
        shown["underSpeechS"] = round(segment.under_speech_s, 3)
    if segment.made_by:
        shown["madeBy"] = segment.made_by
    return shown


def voice_segments(
    tracks: list[dict[str, Any]],
    lengths_s: list[float],
    *,
    preroll_s: float = 0.0,
    gap_s: float = 0.0,
) -> tuple[list[Segment], list[Join]]:
    """Each track's start and end, and how it joins the track it follows. A track after
    "start" begins at ``preroll_s``; one that follows another with overlap 0 (the script
    gives neither an overlap nor a gap) begins ``gap_s`` after it ends."""
    segments: list[Segment] = []
    joins: list[Join] = []
    ends: dict[str, float] = {}
    for track, length in zip(tracks, lengths_s, strict=True):
        after = track.get("playAfter", "start")
        if after == "start":
            start = preroll_s
        elif after in ends:
            overlap = float(track.get("overlap", 0.0) or 0.0)
            start = max(ends[after] - (overlap if overlap else -gap_s), 0.0)
            joins.append(Join(after=after, track=track["id"], overlap_s=ends[after] - start))
        else:
            raise ValueError(f"{track['id']} plays after {after!r}, which is not an earlier track")
        ends[track["id"]] = start + length
        segments.append(
            Segment("voice", track["id"], start, start + length, track.get("voiceName", ""))
        )
    return segments, joins


def estimated_track_seconds(track: dict[str, Any], *, language: str) -> float:
    """How long one voice track reads as planned: its text's reading time
    (``adstudio.speaking_time``) at the track's ``speed`` (a scratch track reads it at that speed,
    so 0.5 takes twice as long)."""
    return spoken_seconds(
        track.get("text", ""), language=language, speed=float(track.get("speed") or 1.0)
    )


def estimated_script_seconds(tracks: list[dict[str, Any]], *, language: str) -> float:
    """How long a voice script runs as planned (the voice tool's estimate): each line's
    reading time at its speed placed as a scratch track would place it; the script ends
    with the last line to end."""
    lengths = [estimated_track_seconds(t, language=language) for t in tracks]
    segments, _ = voice_segments(tracks, lengths)
    return round(max((s.end_s for s in segments), default=0.0), 1)


def timeline(
    *,
    slot_s: float,
    voices: dict[str, Any] | None,
    music: dict[str, Any] | None,
    sfx: dict[str, Any] | None,
    voice_lengths_s: list[float],
    preroll_s: float = 0.0,
    gap_s: float = 0.0,
) -> Timeline:
    """The whole ad placed: ``preroll_s`` and ``gap_s`` as ``voice_segments`` takes them.
    Each effect says how long it plays under speech (``underSpeechS``)."""
    tracks = (voices or {}).get("voiceTracks", [])
    segments, joins = voice_segments(tracks, voice_lengths_s, preroll_s=preroll_s, gap_s=gap_s)
    warnings = []
    speech_end = max((s.end_s for s in segments), default=0.0)
    if speech_end > slot_s:
        warnings.append(f"the speech ends at {speech_end:.2f} s, after the {slot_s:g} s slot")
    if music is not None:
        duration = float(music.get("duration", slot_s))
        segments.append(
            Segment("music", "music", 0.0, duration, str(music.get("musicPrompt", ""))[:80])
        )
        if duration < speech_end:
            warnings.append(
                f"the music ({duration:g} s) stops before the speech ends ({speech_end:.2f} s)"
            )
    voice_ends = [s.end_s for s in segments if s.kind == "voice"]
    speaking = _merged([(s.start_s, s.end_s) for s in segments if s.kind == "voice"])
    for n, effect in enumerate((sfx or {}).get("soundFxPrompts", [])):
        length = float(effect.get("duration", 3.0))
        placement = effect.get("placement") or {}
        kind = placement.get("type", "end")
        if kind == "start":
            start = 0.0
        elif kind == "afterVoice":
            index = placement.get("index")
            if not isinstance(index, int) or not 0 <= index < len(voice_ends):
                warnings.append(f"sfx-{n} follows voice track {index}, which does not exist")
                continue
            start = voice_ends[index]
        else:  # "end": it ends with the ad
            start = max(slot_s - length, 0.0)
        if start + length > slot_s + 1e-9:
            warnings.append(
                f"sfx-{n} ({effect.get('description', '')!r}) plays until {start + length:.2f} s, "
                f"after the {slot_s:g} s slot"
            )
        segments.append(
            Segment(
                "sfx",
                f"sfx-{n}",
                start,
                start + length,
                str(effect.get("description", "")),
                under_speech_s=_under_speech(start, start + length, speaking),
            )
        )
    length_s = max([slot_s, *(s.end_s for s in segments)])
    return Timeline(
        slot_s=float(slot_s),
        length_s=length_s,
        segments=segments,
        joins=joins,
        warnings=warnings,
    )


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The spans as disjoint ones: voices that overlap count once."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _under_speech(start: float, end: float, speaking: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in speaking)
