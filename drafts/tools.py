"""The draft-writing tools the creative director calls, and ``get_current_state``.

Each create tool writes a new immutable ``Draft`` version of the conversation's ad (never
an ad named by the model) and is idempotent per (run, tool_call_id). Handlers raise
``ToolError`` for anything the model can fix; see ``adstudio.tools`` for the contract.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adstudio.tools import Tool, ToolContext, ToolError
from drafts.models import Draft, DraftKind
from drafts.selectors import draft_latest, draft_state
from drafts.services import draft_create
from drafts.speech import spoken_seconds
from voices.services import approved_voices_by_id

_PLAY_AFTER = re.compile(r"start|previous|[0-9]+")  # the whole value (fullmatch)


class _Args(BaseModel):
    # Models add stray keys now and then; ignoring them beats failing the whole call.
    # Whitespace around a value means nothing, and a line of spaces is not a line.
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class VoiceTrack(_Args):
    voiceId: str = Field(description="id of a voice returned by search_voices.")
    text: str = Field(min_length=1, max_length=2000, description="The line this voice reads.")
    playAfter: str | None = Field(
        default=None,
        description='When the line starts: "start", "previous" (default after the first '
        "track) or the 0-based index of an earlier track.",
    )
    overlap: float = Field(
        default=0, ge=0, le=10, description="Seconds this line overlaps the one before it."
    )

    @field_validator("voiceId", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class CreateVoiceDraftArgs(_Args):
    tracks: list[VoiceTrack] = Field(min_length=1, max_length=20)


class CreateMusicDraftArgs(_Args):
    prompt: str = Field(
        min_length=3, max_length=1000, description="Music generation prompt: genre, mood, tempo."
    )
    provider: Literal["loudly", "mubert"] = "loudly"
    duration: int | None = Field(
        default=None, ge=5, le=300, description="Seconds; defaults to the ad's duration."
    )


class SfxPlacement(_Args):
    type: Literal["start", "end", "afterVoice"] = "start"
    index: int | None = Field(
        default=None, ge=0, description="For afterVoice: the 0-based voice track index."
    )


class SfxPrompt(_Args):
    description: str = Field(min_length=2, max_length=300)
    placement: SfxPlacement = Field(default_factory=SfxPlacement)
    duration: float | None = Field(default=None, gt=0, le=30, description="Seconds.")


class CreateSfxDraftArgs(_Args):
    prompts: list[SfxPrompt] = Field(min_length=1, max_length=10)


class GetCurrentStateArgs(_Args):
    pass


def _result(draft: Draft, **extra: Any) -> dict[str, Any]:
    return {
        "versionId": draft.label,
        "kind": draft.kind,
        "status": draft.status,
        "summary": draft.summary,
        **extra,
    }


def _write(ctx: ToolContext, kind: DraftKind, payload: dict, summary: str) -> Draft:
    draft, _created = draft_create(
        ad=ctx.ad,
        kind=kind,
        payload=payload,
        summary=summary,
        run_id=ctx.run_id,
        tool_call_id=ctx.tool_call_id,
        batch=ctx.batch,
    )
    return draft


def create_voice_draft(ctx: ToolContext, args: CreateVoiceDraftArgs) -> dict[str, Any]:
    voices = approved_voices_by_id([track.voiceId for track in args.tracks])
    unknown = sorted({t.voiceId for t in args.tracks if t.voiceId not in voices})
    if unknown:
        raise ToolError(
            f"Unknown or unavailable voiceId(s): {', '.join(unknown)}.",
            "Use ids returned by search_voices for this ad's language.",
        )
    tracks: list[dict[str, Any]] = []
    for index, track in enumerate(args.tracks):
        play_after = track.playAfter or ("start" if index == 0 else "previous")
        if (
            not _PLAY_AFTER.fullmatch(play_after)
            or (play_after == "previous" and index == 0)
            or (play_after.isdigit() and int(play_after) >= index)
        ):
            raise ToolError(
                f"tracks[{index}].playAfter={play_after!r} is not valid.",
                'Use "start", "previous" or the index of an earlier track.',
            )
        voice = voices[track.voiceId]
        tracks.append(
            {
                "voiceId": track.voiceId,
                "voiceName": voice.name,
                "text": track.text,
                "playAfter": play_after,
                "overlap": track.overlap,
            }
        )
    language = ctx.ad.language
    seconds = sum(spoken_seconds(t["text"], language=language) for t in tracks)
    seconds = round(max(seconds - sum(t["overlap"] for t in tracks), 0.0), 1)
    warnings = []
    if seconds > ctx.ad.duration_s:
        warnings.append(
            f"The script runs about {seconds} s, longer than the ad's {ctx.ad.duration_s} s: "
            "shorten the lines."
        )
    names = ", ".join(dict.fromkeys(t["voiceName"] for t in tracks))
    summary = f"{len(tracks)} track(s) read by {names}, about {seconds} s"
    payload = {"tracks": tracks, "estimatedDurationS": seconds}
    draft = _write(ctx, DraftKind.VOICES, payload, summary)
    return _result(draft, estimatedDurationS=seconds, warnings=warnings)


def create_music_draft(ctx: ToolContext, args: CreateMusicDraftArgs) -> dict[str, Any]:
    duration = args.duration or ctx.ad.duration_s
    payload = {"prompt": args.prompt, "provider": args.provider, "duration": duration}
    summary = f"{args.provider}, {duration} s: {args.prompt[:120]}"
    return _result(_write(ctx, DraftKind.MUSIC, payload, summary))


def create_sfx_draft(ctx: ToolContext, args: CreateSfxDraftArgs) -> dict[str, Any]:
    after_voice = [p for p in args.prompts if p.placement.type == "afterVoice"]
    if after_voice:
        voice_draft = draft_latest(ad=ctx.ad, kind=DraftKind.VOICES)
        track_count = len(voice_draft.payload.get("tracks", [])) if voice_draft else 0
        for position, prompt in enumerate(args.prompts):
            placement = prompt.placement
            if placement.type != "afterVoice":
                continue
            if placement.index is None or placement.index >= track_count:
                raise ToolError(
                    f"prompts[{position}].placement.index={placement.index} does not name a "
                    f"track of the current voice draft ({track_count} track(s)).",
                    "Create a voice draft first, or use an index from 0 to "
                    f"{max(track_count - 1, 0)}, or place the effect at start or end.",
                )
    prompts = [p.model_dump(exclude_none=True) for p in args.prompts]
    described = ", ".join(
        f"{p.description[:40]} ({p.placement.type}"
        + (f" {p.placement.index}" if p.placement.index is not None else "")
        + ")"
        for p in args.prompts
    )
    summary = f"{len(prompts)} effect(s): {described}"
    return _result(_write(ctx, DraftKind.SFX, {"prompts": prompts}, summary))


def get_current_state(ctx: ToolContext, args: GetCurrentStateArgs) -> dict[str, Any]:
    return draft_state(ad=ctx.ad)


CREATE_VOICE_DRAFT = Tool(
    name="create_voice_draft",
    description=(
        "Write a new version of the ad's voice script: an ordered list of tracks, each a "
        "line read by one catalogue voice (voiceId from search_voices). Every call creates "
        "a new draft version (v1, v2, ...); earlier versions are kept. The result estimates "
        "the spoken duration and warns when the script is longer than the ad."
    ),
    args_model=CreateVoiceDraftArgs,
    handler=create_voice_draft,
)

CREATE_MUSIC_DRAFT = Tool(
    name="create_music_draft",
    description=(
        "Write a new version of the ad's background music as a generation prompt (genre, "
        "mood, tempo, instruments). Duration defaults to the ad's length. Creates a new "
        "draft version; earlier versions are kept."
    ),
    args_model=CreateMusicDraftArgs,
    handler=create_music_draft,
)

CREATE_SFX_DRAFT = Tool(
    name="create_sfx_draft",
    description=(
        "Write a new version of the ad's sound effects: each a short description and where "
        "it plays (start, end, or afterVoice with the index of a voice track of the current "
        "voice draft). Creates a new draft version; earlier versions are kept."
    ),
    args_model=CreateSfxDraftArgs,
    handler=create_sfx_draft,
)

GET_CURRENT_STATE = Tool(
    name="get_current_state",
    description=(
        "Return the latest and the active version of the ad's voices, music and sound "
        "effects, with one-line summaries, and the versions archived. Call it when unsure "
        "what exists already."
    ),
    args_model=GetCurrentStateArgs,
    handler=get_current_state,
    writes=False,
)
