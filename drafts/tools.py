"""The draft-writing tools the creative director calls, ``set_ad_length`` (a length the
person asked for) and ``get_current_state``.

Each create tool takes its arguments as the design words them, normalises them to one
canonical form and writes a new immutable ``Draft`` version, its payload in the design's
version shape (``drafts.payloads``), of the conversation's ad (never an ad named by the
model). Idempotent per (run, tool_call_id). Handlers raise ``ToolError`` for anything
the model can fix; see ``adstudio.tools`` for the contract.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from django.utils import timezone
from pydantic import Field, field_validator

from adstudio.json_schema import default_unstated
from adstudio.tools import (
    Tool,
    ToolArgs,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolResult,
    WrittenDraft,
)
from audio.timeline import estimated_script_seconds
from drafts.models import Ad, Draft, DraftKind
from drafts.payloads import (
    DEFAULT_SFX_SECONDS,
    MusicVersion,
    SfxPlacement,
    SfxVersion,
    SoundFxPrompt,
    Version,
    VoiceTrack,
    VoiceVersion,
    track_id,
)
from drafts.selectors import draft_latest, draft_state
from drafts.services import draft_create
from voices.selectors import approved_voices_by_id

MAX_OVERLAP_S = 10
# "track-2", or the bare index "2" (ASCII digits only; the whole value: fullmatch).
_TRACK_REFERENCE = re.compile(r"(?:track-)?([0-9]{1,6})")


class VoiceTrackArgs(ToolArgs):
    voiceId: str = Field(description="From search_voices.")
    text: str = Field(min_length=1, max_length=2000)
    playAfter: str | None = Field(
        default=None,
        description='"start" or "track-N" (default: previous)',
    )
    overlap: float = Field(
        default=0,
        json_schema_extra=default_unstated,
        ge=-MAX_OVERLAP_S,
        le=MAX_OVERLAP_S,
        description="Seconds over the track it follows; negative: a gap",
    )

    @field_validator("voiceId", "playAfter", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class CreateVoiceDraftArgs(ToolArgs):
    tracks: list[VoiceTrackArgs] = Field(min_length=1, max_length=20)


class CreateMusicDraftArgs(ToolArgs):
    prompt: str = Field(
        min_length=3, max_length=1000, description="Genre, mood, tempo, instruments"
    )
    provider: Literal["loudly", "mubert"] = Field(
        default="loudly", json_schema_extra=default_unstated
    )
    duration: int | None = Field(
        default=None, ge=5, le=300, description="Seconds (default: the ad's)"
    )


class SfxPlacementArgs(ToolArgs):
    type: Literal["start", "end", "afterVoice"] = "end"
    index: int | None = Field(default=None, ge=0, description="afterVoice: a track index")


class SfxPromptArgs(ToolArgs):
    description: str = Field(min_length=2, max_length=300)
    placement: SfxPlacementArgs | None = None  # its type defaults to end
    duration: float | None = Field(default=None, gt=0, le=30, description="Seconds (default 3)")

    @field_validator("placement", mode="before")
    @classmethod
    def _bare_type(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value


class CreateSfxDraftArgs(ToolArgs):
    prompts: list[SfxPromptArgs] = Field(max_length=10, description="[] for none")


class GetCurrentStateArgs(ToolArgs):
    pass


class SetAdLengthArgs(ToolArgs):
    durationSeconds: int = Field(ge=5, le=120)


class DraftWritten(ToolOutput):
    """A create tool's answer: the design's ``{versionId, status}``, and the kind."""

    versionId: str = Field(description='The new version, e.g. "v2".')
    status: Literal["draft"]
    kind: Literal["voices", "music", "sfx"]


class VoiceDraftWritten(DraftWritten):
    estimatedDurationS: float = Field(description="The script's estimated length.")
    warnings: list[str] = Field(
        default_factory=list, description="Present when the script is longer than the ad."
    )


class DraftKindState(ToolOutput):
    versionId: str = Field(description="The latest version.")
    summary: str
    active: str = Field(default="", description="The active version, when one is.")
    activeSummary: str = Field(default="", description="When the active one is not the latest.")
    measuredDurationS: float = Field(
        default=None,
        description="Voices: how long the latest version's speech ran in a scratch track "
        "of it, when one was rendered (the estimate is the tool's).",
    )


class CurrentState(ToolOutput):
    """Per kind with a draft, its latest version and the active one."""

    voices: DraftKindState = Field(default=None)
    music: DraftKindState = Field(default=None)
    sfx: DraftKindState = Field(default=None)


def _result(draft: Draft, **extra: Any) -> ToolResult:
    """The design's ``{versionId, status}``, and the kind. No summary: it would only
    repeat the arguments the model just wrote, in every later request of the session."""
    content = {"versionId": draft.label, "status": draft.status, "kind": draft.kind, **extra}
    return ToolResult(content, draft=WrittenDraft(draft.kind, draft.label, str(draft.pk)))


def _write(ctx: ToolContext, version: Version) -> Draft:
    draft, _created = draft_create(
        ad=ctx.ad,
        version=version,
        run_id=ctx.run_id,
        tool_call_id=ctx.tool_call_id,
        batch=ctx.batch,
        latest=ctx.draft_versions,
    )
    return draft


def play_after(value: str | None, index: int) -> str:
    """``playAfter`` of track ``index`` in its canonical form, "start" or "track-N".

    Accepted as the design words it ("start", "track-N") and as the aliases models use:
    "previous", or the bare index of an earlier track. Absent: "start" for the first
    track, the track before for the others. ``ToolError`` names anything else.
    """
    if value is None:
        return "start" if index == 0 else track_id(index - 1)
    word = value.lower()
    if word == "start":
        return "start"
    if word == "previous" and index > 0:
        return track_id(index - 1)
    reference = _TRACK_REFERENCE.fullmatch(word)
    if reference and int(reference.group(1)) < index:
        return track_id(int(reference.group(1)))
    allowed = (
        '"start" (the first track has no track before it)'
        if index == 0
        else f'"start" or an earlier track, "track-0" to "{track_id(index - 1)}"'
    )
    raise ToolError(
        f"tracks[{index}].playAfter={value!r} is not valid.",
        f"Use {allowed}, or leave playAfter out to follow the track before.",
    )


def create_voice_draft(ctx: ToolContext, args: CreateVoiceDraftArgs) -> ToolResult:
    voices = approved_voices_by_id([track.voiceId for track in args.tracks])
    unknown = sorted({t.voiceId for t in args.tracks if t.voiceId not in voices})
    if unknown:
        raise ToolError(
            f"Unknown or unavailable voiceId(s): {', '.join(unknown)}.",
            "Use ids returned by search_voices for this ad's language.",
        )
    tracks = [
        VoiceTrack(
            id=track_id(index),
            voiceId=track.voiceId,
            voiceName=voices[track.voiceId].name,
            text=track.text,
            playAfter=play_after(track.playAfter, index),
            overlap=track.overlap,
        )
        for index, track in enumerate(args.tracks)
    ]
    seconds = estimated_script_seconds([t.model_dump() for t in tracks], language=ctx.ad.language)
    version = VoiceVersion(voiceTracks=tracks, estimatedDurationS=seconds)
    draft = _write(ctx, version)
    result = _result(draft, estimatedDurationS=seconds)
    if seconds > ctx.ad.duration_s:
        result.content["warnings"] = [
            f"The script runs about {seconds} s, longer than the ad's {ctx.ad.duration_s} s: "
            "shorten the lines."
        ]
    return result


def create_music_draft(ctx: ToolContext, args: CreateMusicDraftArgs) -> ToolResult:
    version = MusicVersion(
        musicPrompt=args.prompt,
        musicProvider=args.provider,
        duration=args.duration or ctx.ad.duration_s,
    )
    return _result(_write(ctx, version))


def create_sfx_draft(ctx: ToolContext, args: CreateSfxDraftArgs) -> ToolResult:
    placements = [p.placement or SfxPlacementArgs() for p in args.prompts]
    if any(placement.type == "afterVoice" for placement in placements):
        _check_after_voice(ctx, placements)
    version = SfxVersion(
        soundFxPrompts=[
            SoundFxPrompt(
                description=prompt.description,
                placement=SfxPlacement(
                    type=placement.type,
                    index=placement.index if placement.type == "afterVoice" else None,
                ),
                duration=prompt.duration or DEFAULT_SFX_SECONDS,
            )
            for prompt, placement in zip(args.prompts, placements, strict=True)
        ]
    )
    return _result(_write(ctx, version))


def _check_after_voice(ctx: ToolContext, placements: list[SfxPlacementArgs]) -> None:
    """An effect after a voice track names a track of the latest voice draft: one an
    earlier call of the step staged, else the stored one."""
    staged = ctx.batch.staged(Draft) if ctx.batch is not None else []
    voices = [draft for draft in staged if draft.kind == DraftKind.VOICES]
    voice_draft = voices[-1] if voices else draft_latest(ad=ctx.ad, kind=DraftKind.VOICES)
    track_count = len(voice_draft.payload.get("voiceTracks", [])) if voice_draft else 0
    for position, placement in enumerate(placements):
        if placement.type != "afterVoice":
            continue
        if placement.index is None or placement.index >= track_count:
            raise ToolError(
                f"prompts[{position}].placement.index={placement.index} does not name a "
                f"track of the current voice draft ({track_count} track(s)).",
                "Create a voice draft first, or use an index from 0 to "
                f"{max(track_count - 1, 0)}, or place the effect at start or end.",
            )


class AdLengthSet(ToolOutput):
    durationSeconds: int
    previousSeconds: int


def set_ad_length(ctx: ToolContext, args: SetAdLengthArgs) -> dict[str, Any]:
    """The ad's slot (the brief's ``durationSeconds``) changed because the person asked
    for another length: drafts written after it are measured against the new slot. The
    old length stays in the call's recorded result."""
    previous = ctx.ad.duration_s
    values = {"duration_s": args.durationSeconds, "updated_at": timezone.now()}
    if ctx.batch is not None:
        ctx.batch.pop_update(Ad, ctx.ad.pk)  # two lengths in one round: the last one holds
        ctx.batch.update(Ad, ctx.ad.pk, **values)
    else:
        Ad.objects.filter(pk=ctx.ad.pk).update(**values)
    ctx.ad.duration_s = args.durationSeconds  # what the run's later calls measure against
    return {"durationSeconds": args.durationSeconds, "previousSeconds": previous}


def get_current_state(ctx: ToolContext, args: GetCurrentStateArgs) -> dict[str, Any]:
    """Per kind with a draft: the latest version (the design's ``versionId`` and
    ``summary``) and which version is active, if one is."""
    state: dict[str, Any] = {}
    for kind, entry in draft_state(ad=ctx.ad).items():
        if entry["latest"] is None:
            continue
        state[kind] = {"versionId": entry["latest"], "summary": entry["latestSummary"]}
        if entry["active"]:
            state[kind]["active"] = entry["active"]
            if entry["active"] != entry["latest"]:
                state[kind]["activeSummary"] = entry["activeSummary"]
    return state


CREATE_VOICE_DRAFT = Tool(
    name="create_voice_draft",
    description=("Create a new voice script version: tracks in order, one voice's line each."),
    args_model=CreateVoiceDraftArgs,
    handler=create_voice_draft,
    output_model=VoiceDraftWritten,
)

CREATE_MUSIC_DRAFT = Tool(
    name="create_music_draft",
    description="Create a new music version from a generation prompt.",
    args_model=CreateMusicDraftArgs,
    handler=create_music_draft,
    output_model=DraftWritten,
)

CREATE_SFX_DRAFT = Tool(
    name="create_sfx_draft",
    description="Create a new sound effects version.",
    args_model=CreateSfxDraftArgs,
    handler=create_sfx_draft,
    output_model=DraftWritten,
)

SET_AD_LENGTH = Tool(
    name="set_ad_length",
    description="Change the ad's length (s), only when the person asks.",
    args_model=SetAdLengthArgs,
    handler=set_ad_length,
    output_model=AdLengthSet,
)

GET_CURRENT_STATE = Tool(
    name="get_current_state",
    description="Each draft's latest and active version, summarised.",
    args_model=GetCurrentStateArgs,
    handler=get_current_state,
    writes=False,
    output_model=CurrentState,
)
