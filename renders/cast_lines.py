"""A render's voice tracks as lines for their cast voices' speech providers
(``speech.reading``), from the voices draft and the catalogue: what the task reads and
what the estimate prices; what the mix is handed of them, and what the timeline says of
who read each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from speech.base import pcm_samples
from speech.music_reading import MusicRead
from speech.reading import GUIDE, CastVoice, Line, LineRead, lines_of
from speech.registry import provider_label
from voices.selectors import voice_traits_by_id


def cast_of(voices: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The catalogue's traits of each voice the tracks cast, by the id as the tracks give it."""
    return voice_traits_by_id(t.get("voiceId", "") for t in (voices or {}).get("voiceTracks", []))


def cast_lines(
    voices: Mapping[str, Any] | None, *, language: str, cast: Mapping[str, Mapping[str, Any]]
) -> list[Line]:
    return lines_of(
        (voices or {}).get("voiceTracks", []),
        language=language,
        cast={
            voice_id: CastVoice(
                provider=traits["provider"],
                provider_voice_id=traits["provider_voice_id"],
                locale=traits.get("locale", ""),
                settings=traits.get("settings") or {},
            )
            for voice_id, traits in cast.items()
        },
    )


def for_the_mix(reads: list[LineRead], composed: MusicRead | None) -> dict[str, Any]:
    """What the mix is handed of the lines read and the music composed (``mix.render``'s
    ``read``, ``music_maker`` and ``music_made_by``)."""
    from audio.mix import Reading
    from audio.music import MadeBed

    return {
        "read": {
            r.track_id: Reading(pcm_samples(r.audio), r.sample_rate) for r in reads if r.audio
        },
        "music_maker": (
            MadeBed(pcm_samples(composed.audio), composed.sample_rate, composed.made_by)
            if composed and composed.audio
            else None
        ),
        "music_made_by": composed.made_by if composed else "",
    }


def readers_in_timeline(
    timeline: dict[str, Any], reads: list[LineRead], composed: MusicRead | None = None
) -> dict[str, Any]:
    """The timeline with each voice segment saying who read it (``reader``: the provider,
    or ``guide``; ``readBy``: as the review desk says it, why the guide voice did or that
    the line came from the cache), and a ``speech`` summary of what the lines were billed."""
    by_track = {read.track_id: read for read in reads}
    segments = []
    for segment in timeline.get("segments", []):
        read = by_track.get(segment.get("ref", "")) if segment.get("kind") == "voice" else None
        if read is not None:
            segment = {**segment, "reader": read.reader, "readBy": _read_by(read)}
        segments.append(segment)
    return {
        **timeline,
        "segments": segments,
        "warnings": [
            *timeline.get("warnings", []),
            *(r.warning for r in reads if r.warning),
            *([composed.warning] if composed and composed.warning else []),
        ],
        "speech": {
            "characters": sum(r.characters for r in reads),
            "costUsd": str(sum((r.cost_usd for r in reads), start=0)),
            "costExact": all(r.cost_exact for r in reads),
            "cachedLines": sum(r.cached for r in reads),
        },
    }


def _read_by(read: LineRead) -> str:
    """ "ElevenLabs", "ElevenLabs (cached)", or "guide voice: Azure AI Speech not configured"."""
    if read.reader == GUIDE:
        return read.note or "guide voice"
    return provider_label(read.reader) + (" (cached)" if read.cached else "")
