"""Where each part of an ad plays, as docs/api.md defines it ("Draft payloads"): a voice
track starts when the track it follows ends, minus its overlap (a negative overlap is a
gap), or at 0 after "start"; the music from 0 for its duration; an effect at the start,
ending with the ad, or when a voice track ends. Given each track's length (measured from
its synthesis, or estimated), the arithmetic is this module's alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adstudio.speech import spoken_seconds


@dataclass(frozen=True)
class Segment:
    kind: str  # "voice", "music" or "sfx"
    ref: str  # "track-0", "music", "sfx-0"
    start_s: float
    end_s: float
    label: str = ""


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
            "segments": [
                {
                    "kind": s.kind,
                    "ref": s.ref,
                    "startS": round(s.start_s, 3),
                    "endS": round(s.end_s, 3),
                    "label": s.label,
                }
                for s in self.segments
            ],
            "joins": [
                {"after": j.after, "track": j.track, "overlapS": round(j.overlap_s, 3)}
                for j in self.joins
            ],
            "warnings": self.warnings,
        }


def voice_segments(
    tracks: list[dict[str, Any]], lengths_s: list[float]
) -> tuple[list[Segment], list[Join]]:
    """Each track's start and end, and how it joins the track it follows."""
    segments: list[Segment] = []
    joins: list[Join] = []
    ends: dict[str, float] = {}
    for track, length in zip(tracks, lengths_s, strict=True):
        after = track.get("playAfter", "start")
        if after == "start":
            start = 0.0
        elif after in ends:
            start = max(ends[after] - float(track.get("overlap", 0.0)), 0.0)
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
    (``adstudio.speech``) at the track's ``speed`` (a scratch track reads it at that speed,
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
) -> Timeline:
    tracks = (voices or {}).get("voiceTracks", [])
    segments, joins = voice_segments(tracks, voice_lengths_s)
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
            Segment("sfx", f"sfx-{n}", start, start + length, str(effect.get("description", "")))
        )
    length_s = max([slot_s, *(s.end_s for s in segments)])
    return Timeline(
        slot_s=float(slot_s),
        length_s=length_s,
        segments=segments,
        joins=joins,
        warnings=warnings,
    )
