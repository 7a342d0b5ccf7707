"""A draft as a reviewer reads it: its content laid out by kind, the same content as lines,
and what it changes from another version (the active one, or the one before).

The admin shows these; they read the stored payload (drafts.payloads' version shapes)
and never change anything.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from adstudio.speaking_time import spoken_seconds
from drafts.models import Draft, DraftKind


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _track_number(play_after: str) -> str:
    """``track-1`` as people count it: "track 2"."""
    return f"track {int(play_after.removeprefix('track-')) + 1}"


def _starts(play_after: str) -> str:
    return "at the start" if play_after == "start" else f"after {_track_number(play_after)}"


def _overlap(overlap: float) -> str:
    if overlap > 0:
        return f"overlaps {_seconds(overlap)}"
    if overlap < 0:
        return f"{_seconds(-overlap)} gap"
    return ""


def _placement(placement: dict[str, Any]) -> str:
    if placement.get("type") == "afterVoice" and placement.get("index") is not None:
        return f"after voice track {placement['index'] + 1}"
    return {"start": "at the start", "end": "at the end"}.get(placement.get("type"), "")


def voice_tracks(payload: dict[str, Any], *, language: str) -> list[dict[str, Any]]:
    """One row per track, in order: who reads which line, when, and for about how long."""
    return [
        {
            "number": index + 1,
            "voice_name": track.get("voiceName", ""),
            "voice_id": track.get("voiceId", ""),
            "text": track.get("text", ""),
            "starts": _starts(track.get("playAfter", "start")),
            "overlap": _overlap(track.get("overlap", 0)),
            "seconds": round(spoken_seconds(track.get("text", ""), language=language), 1),
        }
        for index, track in enumerate(payload.get("voiceTracks", []))
    ]


def sound_effects(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "number": index + 1,
            "description": effect.get("description", ""),
            "placement": _placement(effect.get("placement", {})),
            "seconds": effect.get("duration"),
            "overlap": _overlap(effect.get("overlap", 0)),
        }
        for index, effect in enumerate(payload.get("soundFxPrompts", []))
    ]


def content_lines(draft: Draft, *, language: str) -> list[str]:
    """The version as lines of text, one per track, effect or setting: what the diff
    compares."""
    payload = draft.payload
    if draft.kind == DraftKind.VOICES:
        lines = [
            f"track {t['number']}: {t['voice_name']} ({t['voice_id']}) reads "
            f"\u201c{t['text']}\u201d {t['starts']}" + (f", {t['overlap']}" if t["overlap"] else "")
            for t in voice_tracks(payload, language=language)
        ]
        return [*lines, f"about {_seconds(payload.get('estimatedDurationS', 0))} in all"]
    if draft.kind == DraftKind.MUSIC:
        return [
            f"prompt: {payload.get('musicPrompt', '')}",
            f"provider: {payload.get('musicProvider', '')}",
            f"duration: {_seconds(payload.get('duration', 0))}",
        ]
    return [
        f"effect {e['number']}: {e['description']}, {e['placement']}, "
        f"{_seconds(e['seconds'] or 0)}" + (f", {e['overlap']}" if e["overlap"] else "")
        for e in sound_effects(payload)
    ]


@dataclass(frozen=True)
class DiffLine:
    change: str  # "added", "removed" or "same"
    text: str


def diff(base: Draft, draft: Draft, *, language: str) -> list[DiffLine]:
    """What ``draft`` changes from ``base`` (another version of the same kind: the active
    one, or the one before), line by line."""
    changes = {"+ ": "added", "- ": "removed", "  ": "same"}
    return [
        DiffLine(changes[line[:2]], line[2:])
        for line in difflib.ndiff(
            content_lines(base, language=language), content_lines(draft, language=language)
        )
        if line[:2] in changes
    ]
