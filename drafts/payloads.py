"""A draft's payload in the design's version shapes, which the web client reads:
``VoiceVersion``, ``MusicVersion`` and ``SfxVersion`` (docs/api.md, "Draft payloads").

The draft tools build payloads with these models; the API documents them; each kind's
one-line summary is derived here. Fields may be added beside the design's (``voiceName``,
``estimatedDurationS``), never renamed or dropped.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from adstudio.text import clip_words
from drafts.models import DraftKind

MUSIC_PROVIDERS = ("loudly", "mubert")
DEFAULT_SFX_SECONDS = 3.0
SUMMARY_CHARS = 500  # Draft.summary's column (draft_create clips what it is given to it)


def track_id(index: int) -> str:
    """A voice track's id, as ``playAfter`` names it: ``track-0``, ``track-1``, ..."""
    return f"track-{index}"


class _Shape(BaseModel):
    # As the API serialises a payload: every field with a default is there all the same,
    # so the OpenAPI schema lists it as required; titles are the field names.
    model_config = ConfigDict(
        json_schema_serialization_defaults_required=True,
        field_title_generator=lambda name, info: name,
    )


class VoiceTrack(_Shape):
    id: str = Field(description='"track-0" for the first track, then "track-1", ...')
    voiceId: str
    voiceName: str = Field(description="The catalogue voice's name when the draft was made.")
    text: str
    playAfter: str = Field(description='"start", or the id of the earlier track it follows.')
    overlap: float = Field(
        description="Seconds it overlaps the track it follows; negative is a gap."
    )
    speed: float = 1.0


class VoiceVersion(_Shape):
    voiceTracks: list[VoiceTrack]
    estimatedDurationS: float = Field(description="Estimated length of the script, seconds.")


class MusicVersion(_Shape):
    musicPrompt: str
    musicProvider: Literal["loudly", "mubert"]
    duration: int = Field(description="Seconds.")


class SfxPlacement(_Shape):
    # index is left out of the payload unless the type is afterVoice: not required.
    model_config = ConfigDict(json_schema_serialization_defaults_required=False)

    type: Literal["start", "end", "afterVoice"]
    # Absent unless the type is afterVoice (never null in a payload).
    index: int | SkipJsonSchema[None] = Field(
        default=None,
        description="afterVoice: the voice track's index.",
        json_schema_extra=lambda schema: schema.pop("default", None),
    )


class SoundFxPrompt(_Shape):
    description: str
    placement: SfxPlacement
    duration: float = Field(description="Seconds.")
    playAfter: str = "start"
    overlap: float = 0.0


class SfxVersion(_Shape):
    soundFxPrompts: list[SoundFxPrompt]


Version = VoiceVersion | MusicVersion | SfxVersion
VERSION_SHAPES: dict[DraftKind, type[Version]] = {
    DraftKind.VOICES: VoiceVersion,
    DraftKind.MUSIC: MusicVersion,
    DraftKind.SFX: SfxVersion,
}
_KINDS = {shape: kind for kind, shape in VERSION_SHAPES.items()}


def kind_of(version: Version) -> DraftKind:
    """The draft kind a version shape is the payload of."""
    try:
        return _KINDS[type(version)]
    except KeyError:
        raise TypeError(f"not a version shape: {type(version).__name__}") from None


def payload_of(version: Version) -> dict[str, Any]:
    """The JSON stored as a draft's payload (absent optional fields left out)."""
    return version.model_dump(mode="json", exclude_none=True)


def summary_of(version: Version) -> str:
    """One line a person or the model reads to tell versions apart."""
    if isinstance(version, VoiceVersion):
        names = ", ".join(dict.fromkeys(track.voiceName for track in version.voiceTracks))
        count = len(version.voiceTracks)
        line = (
            f"Voices, about {version.estimatedDurationS:g} s: {count} "
            f"{'track' if count == 1 else 'tracks'} read by {names}"
        )
    elif isinstance(version, MusicVersion):
        line = (
            f"Music ({version.musicProvider}), {version.duration} s: "
            f"{clip_words(version.musicPrompt, 120)}"
        )
    elif isinstance(version, SfxVersion):
        effects = ", ".join(
            f"{clip_words(fx.description, 40)} ({_placement(fx.placement)})"
            for fx in version.soundFxPrompts
        )
        line = f"Sound effects: {effects or 'none'}"
    else:
        raise TypeError(f"not a version shape: {type(version).__name__}")
    return clip_words(line, SUMMARY_CHARS)


def _placement(placement: SfxPlacement) -> str:
    if placement.type == "afterVoice" and placement.index is not None:
        return f"after {track_id(placement.index)}"
    return placement.type
