"""The draft-writing tools: validation, versioning, idempotency and their results."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from adstudio.tools import ToolContext, ToolError
from drafts.models import Draft
from drafts.tools import (
    CREATE_MUSIC_DRAFT,
    CREATE_SFX_DRAFT,
    CREATE_VOICE_DRAFT,
    GET_CURRENT_STATE,
)

pytestmark = pytest.mark.django_db


def call(tool, ctx, **arguments):
    return tool.handler(ctx, tool.args_model.model_validate(arguments))


@pytest.fixture
def ctx(ad):
    return ToolContext(ad=ad, run_id=uuid.uuid4(), tool_call_id="1:call_a")


def test_voice_draft_records_tracks_defaults_and_duration(ctx, make_voice):
    somchai = make_voice(name="Somchai", gender="male")
    malee = make_voice(name="Malee")

    result = call(
        CREATE_VOICE_DRAFT,
        ctx,
        tracks=[
            {"voiceId": str(somchai.pk), "text": "สวัสดีครับ ครอบครัวของคุณ"},
            {"voiceId": malee.pk, "text": "ฟังเพลงได้ทั้งบ้าน", "overlap": 0.5},
        ],
    )

    assert result["versionId"] == "v1"
    assert result["kind"] == "voices" and result["status"] == "draft"
    assert result["warnings"] == []
    draft = Draft.objects.get(ad=ctx.ad, kind="voices")
    tracks = draft.payload["tracks"]
    assert [t["playAfter"] for t in tracks] == ["start", "previous"]
    assert [t["voiceName"] for t in tracks] == ["Somchai", "Malee"]
    assert tracks[1]["overlap"] == 0.5
    # Thai is timed by characters: 21 + 15 letters at 12/s, minus the 0.5 s overlap.
    assert draft.payload["estimatedDurationS"] == pytest.approx(2.5, abs=0.3)
    assert "Somchai, Malee" in draft.summary


def test_voice_draft_warns_when_the_script_is_longer_than_the_ad(ctx, make_voice, make_ad):
    voice = make_voice(language="en")
    ad = make_ad(language="en", duration_s=5)
    ctx = ToolContext(ad=ad, run_id=uuid.uuid4(), tool_call_id="1:x")

    result = call(
        CREATE_VOICE_DRAFT, ctx, tracks=[{"voiceId": str(voice.pk), "text": "word " * 40}]
    )

    assert result["estimatedDurationS"] == 16.0
    assert "longer than the ad's 5 s" in result["warnings"][0]


@pytest.mark.parametrize(
    "voice_overrides", [{"approved": False}, {"active": False}], ids=["unapproved", "inactive"]
)
def test_voice_draft_refuses_voices_not_offered_to_the_model(ctx, make_voice, voice_overrides):
    good = make_voice()
    hidden = make_voice(**voice_overrides)

    with pytest.raises(ToolError) as excinfo:
        call(
            CREATE_VOICE_DRAFT,
            ctx,
            tracks=[
                {"voiceId": str(good.pk), "text": "a"},
                {"voiceId": str(hidden.pk), "text": "b"},
                {"voiceId": "nope", "text": "c"},
            ],
        )

    assert excinfo.value.error == f"Unknown or unavailable voiceId(s): {hidden.pk}, nope."
    assert "search_voices" in excinfo.value.suggestion
    assert not Draft.objects.exists()


# the whole value: not "1" before a newline, nor another script's digit
@pytest.mark.parametrize("play_after", ["1", "2", "later", "1\n", "\u0660", "0 1", "start now"])
def test_voice_draft_play_after_must_name_an_earlier_track(ctx, make_voice, play_after):
    voice = make_voice()
    with pytest.raises(ToolError, match=r"tracks\[1\]\.playAfter"):
        call(
            CREATE_VOICE_DRAFT,
            ctx,
            tracks=[
                {"voiceId": str(voice.pk), "text": "a"},
                {"voiceId": str(voice.pk), "text": "b", "playAfter": play_after},
            ],
        )


def test_voice_draft_values_are_stored_without_surrounding_whitespace(ctx, make_voice):
    voice = make_voice()
    call(
        CREATE_VOICE_DRAFT,
        ctx,
        tracks=[
            {"voiceId": f" {voice.pk} ", "text": "  Hello!\n"},
            {"voiceId": str(voice.pk), "text": "Bye.", "playAfter": "0\n"},
        ],
    )
    tracks = Draft.objects.get().payload["tracks"]
    assert [(t["text"], t["playAfter"]) for t in tracks] == [("Hello!", "start"), ("Bye.", "0")]


def test_the_first_track_cannot_follow_a_previous_one(ctx, make_voice):
    voice = make_voice()
    with pytest.raises(ToolError, match=r"tracks\[0\]\.playAfter='previous'"):
        call(
            CREATE_VOICE_DRAFT,
            ctx,
            tracks=[{"voiceId": str(voice.pk), "text": "a", "playAfter": "previous"}],
        )


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (CREATE_VOICE_DRAFT, {"tracks": [{"voiceId": "1", "text": "   "}]}),
        (CREATE_MUSIC_DRAFT, {"prompt": "     \n  "}),
        (CREATE_SFX_DRAFT, {"prompts": [{"description": " \t "}]}),
    ],
)
def test_blank_text_is_refused(ctx, tool, arguments):
    with pytest.raises(ValidationError, match="at least"):
        call(tool, ctx, **arguments)
    assert not Draft.objects.exists()


def test_music_draft_defaults_to_the_ads_duration_and_counts_versions(ctx):
    first = call(CREATE_MUSIC_DRAFT, ctx, prompt="calm acoustic guitar")
    second_ctx = ToolContext(ad=ctx.ad, run_id=ctx.run_id, tool_call_id="2:call_b")
    second = call(CREATE_MUSIC_DRAFT, second_ctx, prompt="upbeat pop", provider="mubert")

    assert (first["versionId"], second["versionId"]) == ("v1", "v2")
    latest = Draft.objects.get(ad=ctx.ad, kind="music", version=2)
    assert latest.payload == {"prompt": "upbeat pop", "provider": "mubert", "duration": 30}
    assert latest.parent.version == 1


def test_a_replayed_call_returns_the_first_draft(ctx):
    first = call(CREATE_MUSIC_DRAFT, ctx, prompt="calm acoustic guitar")
    again = call(CREATE_MUSIC_DRAFT, ctx, prompt="something else entirely")

    assert again == first
    assert Draft.objects.filter(kind="music").count() == 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"prompt": "x" * 2},
        {"prompt": "calm", "provider": "spotify"},
        {"prompt": "calm", "duration": -5},
    ],
)
def test_music_arguments_are_validated(arguments):
    with pytest.raises(ValidationError):
        CREATE_MUSIC_DRAFT.args_model.model_validate(arguments)


def test_sfx_after_voice_index_is_checked_against_the_voice_draft(ctx, make_voice):
    placement = {"type": "afterVoice", "index": 1}
    with pytest.raises(ToolError, match=r"\(0 track\(s\)\)") as excinfo:
        call(CREATE_SFX_DRAFT, ctx, prompts=[{"description": "whoosh", "placement": placement}])
    assert excinfo.value.suggestion.startswith("Create a voice draft first")

    voice = make_voice()
    call(
        CREATE_VOICE_DRAFT,
        ToolContext(ad=ctx.ad, run_id=ctx.run_id, tool_call_id="3:v"),
        tracks=[{"voiceId": str(voice.pk), "text": "a"}, {"voiceId": str(voice.pk), "text": "b"}],
    )
    with pytest.raises(ToolError, match=r"index=2 does not name a track .*\(2 track"):
        call(
            CREATE_SFX_DRAFT,
            ctx,
            prompts=[{"description": "chime", "placement": {"type": "afterVoice", "index": 2}}],
        )

    result = call(
        CREATE_SFX_DRAFT,
        ctx,
        prompts=[
            {"description": "whoosh", "placement": placement},
            {"description": "crowd cheer"},
        ],
    )
    assert result["versionId"] == "v1"
    assert result["summary"] == "2 effect(s): whoosh (afterVoice 1), crowd cheer (start)"


def test_current_state_reports_latest_and_active(ctx):
    from drafts.services import draft_activate

    call(CREATE_MUSIC_DRAFT, ctx, prompt="calm acoustic guitar")
    v2 = call(
        CREATE_MUSIC_DRAFT,
        ToolContext(ad=ctx.ad, run_id=ctx.run_id, tool_call_id="2:b"),
        prompt="upbeat pop",
    )
    draft_activate(ad=ctx.ad, draft_id=Draft.objects.get(kind="music", version=1).pk)

    state = call(GET_CURRENT_STATE, ctx)

    assert state["music"]["latest"] == "v2"
    assert state["music"]["latestSummary"] == v2["summary"]
    assert state["music"]["active"] == "v1"
    assert state["voices"] == {
        "latest": None,
        "latestSummary": None,
        "active": None,
        "activeSummary": None,
        "archived": [],
    }
