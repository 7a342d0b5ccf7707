"""The draft-writing tools: validation, versioning, idempotency and their results."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from adstudio.speaking_time import spoken_seconds
from adstudio.tools import ToolContext, ToolError, ToolResult
from drafts.models import Draft
from drafts.tools import (
    CREATE_MUSIC_DRAFT,
    CREATE_SFX_DRAFT,
    CREATE_VOICE_DRAFT,
    GET_CURRENT_STATE,
)

pytestmark = pytest.mark.django_db


def call(tool, ctx, **arguments):
    """The handler's result as the model reads it; a create tool also reports its draft."""
    result = tool.handler(ctx, tool.args_model.model_validate(arguments))
    if isinstance(result, ToolResult):
        draft = Draft.objects.get(pk=result.draft.id)
        assert (result.draft.kind, result.draft.version) == (draft.kind, draft.label)
        assert (draft.kind, draft.label) == (result.content["kind"], result.content["versionId"])
        return result.content
    return result


@pytest.fixture
def ctx(ad):
    return ToolContext(ad=ad, run_id=uuid.uuid4(), tool_call_id="1:call_a")


def test_voice_draft_is_stored_in_the_designs_voice_version_shape(ctx, make_voice):
    somchai = make_voice(name="Somchai", gender="male")
    malee = make_voice(name="Malee")

    # The design's own example: the second track follows track-0 after a 0.5 s gap.
    result = call(
        CREATE_VOICE_DRAFT,
        ctx,
        tracks=[
            {"voiceId": str(somchai.pk), "text": "สวัสดีครับ ครอบครัวของคุณ"},
            {"voiceId": malee.pk, "text": "ฟังเพลงได้ทั้งบ้าน", "playAfter": "track-0", "overlap": -0.5},
        ],
    )

    assert (result["versionId"], result["status"], result["kind"]) == ("v1", "draft", "voices")
    assert "warnings" not in result
    draft = Draft.objects.get(ad=ctx.ad, kind="voices")
    assert draft.payload["voiceTracks"] == [
        {
            "id": "track-0",
            "voiceId": str(somchai.pk),
            "voiceName": "Somchai",
            "text": "สวัสดีครับ ครอบครัวของคุณ",
            "playAfter": "start",
            "overlap": 0.0,
            "speed": 1.0,
        },
        {
            "id": "track-1",
            "voiceId": str(malee.pk),
            "voiceName": "Malee",
            "text": "ฟังเพลงได้ทั้งบ้าน",
            "playAfter": "track-0",
            "overlap": -0.5,
            "speed": 1.0,
        },
    ]
    # The second line starts 0.5 s after the first ends.
    first, second = (spoken_seconds(t["text"], language="th") for t in draft.payload["voiceTracks"])
    assert draft.payload["estimatedDurationS"] == round(first + 0.5 + second, 1)
    assert result["estimatedDurationS"] == draft.payload["estimatedDurationS"]
    assert draft.summary == "Voices, about 3.2 s: 2 tracks read by Somchai, Malee"


def test_tracks_after_start_overlap_and_the_longest_ends_the_script(ctx, make_voice):
    voice = make_voice(language="en")
    ad = ctx.ad
    ad.language = "en"
    words = "word " * 10  # 4 s at 2.5 words/s
    call(
        CREATE_VOICE_DRAFT,
        ctx,
        tracks=[
            {"voiceId": str(voice.pk), "text": words},
            {"voiceId": str(voice.pk), "text": words, "playAfter": "start"},
            {"voiceId": str(voice.pk), "text": words, "overlap": 1},  # after track-1: 3 s in
        ],
    )
    assert Draft.objects.get().payload["estimatedDurationS"] == 7.0


@pytest.mark.parametrize(
    ("play_after", "stored"),
    [
        ("previous", "track-1"),
        (1, "track-1"),
        ("1", "track-1"),
        (0.0, "track-0"),
        ("track-0", "track-0"),
        ("Track-1", "track-1"),
        (" start ", "start"),
        (None, "track-1"),  # null, as strict-mode providers send it: the default
    ],
)
def test_play_after_aliases_are_stored_as_track_ids(ctx, make_voice, play_after, stored):
    voice = make_voice()
    tracks = [{"voiceId": str(voice.pk), "text": line} for line in ("a", "b")]
    tracks.append({"voiceId": str(voice.pk), "text": "c", "playAfter": play_after})
    call(CREATE_VOICE_DRAFT, ctx, tracks=tracks)
    stored_tracks = Draft.objects.get().payload["voiceTracks"]
    assert [t["playAfter"] for t in stored_tracks] == ["start", "track-0", stored]


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


# The same or a later track, a word that is not an alias, and values that only look like
# an index: "1" before a newline is stripped to "1" (the same track), another script's
# digit, two numbers, more than a word.
@pytest.mark.parametrize(
    "play_after",
    ["1", "2", "track-1", "track-7", "later", "1\n", "\u0660", "0 1", "start now", "track-", "-1"],
)
def test_voice_draft_play_after_must_name_an_earlier_track(ctx, make_voice, play_after):
    voice = make_voice()
    with pytest.raises(ToolError) as excinfo:
        call(
            CREATE_VOICE_DRAFT,
            ctx,
            tracks=[
                {"voiceId": str(voice.pk), "text": "a"},
                {"voiceId": str(voice.pk), "text": "b", "playAfter": play_after},
            ],
        )
    assert excinfo.value.error.startswith("tracks[1].playAfter=")
    assert excinfo.value.suggestion.startswith('Use "start" or an earlier track, "track-0" to')
    assert not Draft.objects.exists()


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
    tracks = Draft.objects.get().payload["voiceTracks"]
    assert [(t["voiceId"], t["text"], t["playAfter"]) for t in tracks] == [
        (str(voice.pk), "Hello!", "start"),
        (str(voice.pk), "Bye.", "track-0"),
    ]


@pytest.mark.parametrize("play_after", ["previous", "track-0", "0"])
def test_the_first_track_can_only_play_at_the_start(ctx, make_voice, play_after):
    voice = make_voice()
    with pytest.raises(ToolError, match=r"tracks\[0\]\.playAfter=") as excinfo:
        call(
            CREATE_VOICE_DRAFT,
            ctx,
            tracks=[{"voiceId": str(voice.pk), "text": "a", "playAfter": play_after}],
        )
    assert "the first track has no track before it" in excinfo.value.suggestion


@pytest.mark.parametrize("overlap", [-10.5, 10.5, -1e9])
def test_an_overlap_or_gap_beyond_ten_seconds_is_refused(overlap):
    with pytest.raises(ValidationError, match=r"tracks\.0\.overlap"):
        CREATE_VOICE_DRAFT.args_model.model_validate(
            {"tracks": [{"voiceId": "1", "text": "a", "overlap": overlap}]}
        )


def test_the_overlap_bounds_are_enforced_not_stated_on_every_call(ctx):
    track = CREATE_VOICE_DRAFT.parameters_schema()["properties"]["tracks"]["items"]
    overlap = track["properties"]["overlap"]
    assert "minimum" not in overlap and "maximum" not in overlap
    assert "negative" in overlap["description"]
    with pytest.raises(ValidationError, match="less than or equal to 10"):
        call(CREATE_VOICE_DRAFT, ctx, tracks=[{"voiceId": "1", "text": "Hi", "overlap": 11}])
    assert not Draft.objects.exists()


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


def test_music_draft_is_stored_in_the_designs_music_version_shape(ctx):
    first = call(CREATE_MUSIC_DRAFT, ctx, prompt="calm acoustic guitar")
    second_ctx = ToolContext(ad=ctx.ad, run_id=ctx.run_id, tool_call_id="2:call_b")
    second = call(CREATE_MUSIC_DRAFT, second_ctx, prompt="upbeat pop", provider="mubert")

    assert (first["versionId"], second["versionId"]) == ("v1", "v2")
    assert first["status"] == "draft"
    latest = Draft.objects.get(ad=ctx.ad, kind="music", version=2)
    assert latest.payload == {
        "musicPrompt": "upbeat pop",
        "musicProvider": "mubert",
        "duration": 30,
    }
    assert latest.summary == "Music (mubert), 30 s: upbeat pop"
    assert latest.parent.version == 1
    assert Draft.objects.get(version=1).payload["musicProvider"] == "loudly"  # the default


def test_a_long_music_prompt_is_summarised_at_a_word_boundary(ctx):
    prompt = "Bright upbeat synth pop with handclaps, " * 10
    call(CREATE_MUSIC_DRAFT, ctx, prompt=prompt, duration=15)

    summary = Draft.objects.get().summary
    assert summary.startswith("Music (loudly), 15 s: Bright upbeat synth pop")
    assert summary.endswith("…")
    head = summary.removesuffix("…")
    assert len(head) < len("Music (loudly), 15 s: ") + 120
    assert prompt.startswith(head.removeprefix("Music (loudly), 15 s: "))
    assert prompt[len(head.removeprefix("Music (loudly), 15 s: "))] in " ,"  # a whole word


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


def test_sfx_draft_takes_the_designs_defaults(ctx):
    result = call(
        CREATE_SFX_DRAFT,
        ctx,
        prompts=[
            {"description": "crowd cheer"},
            {"description": "door slam", "placement": "start", "duration": 1.5},
            {"description": "chime", "placement": {"type": "end", "index": 4}},
            {"description": "rain", "placement": None, "duration": None},
        ],
    )

    assert (result["versionId"], result["status"]) == ("v1", "draft")
    payload = Draft.objects.get(kind="sfx").payload
    assert payload == {
        "soundFxPrompts": [
            {
                "description": "crowd cheer",
                "placement": {"type": "end"},
                "duration": 3.0,
                "playAfter": "start",
                "overlap": 0.0,
            },
            {
                "description": "door slam",
                "placement": {"type": "start"},
                "duration": 1.5,
                "playAfter": "start",
                "overlap": 0.0,
            },
            {  # an index means nothing at the end: dropped
                "description": "chime",
                "placement": {"type": "end"},
                "duration": 3.0,
                "playAfter": "start",
                "overlap": 0.0,
            },
            {
                "description": "rain",
                "placement": {"type": "end"},
                "duration": 3.0,
                "playAfter": "start",
                "overlap": 0.0,
            },
        ]
    }
    assert Draft.objects.get(kind="sfx").summary == (
        "Sound effects: crowd cheer (end), door slam (start), chime (end), rain (end)"
    )


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
    assert Draft.objects.get(kind="sfx").summary == (
        "Sound effects: whoosh (after track-1), crowd cheer (end)"
    )
    stored = Draft.objects.get(kind="sfx").payload["soundFxPrompts"][0]
    assert stored["placement"] == {"type": "afterVoice", "index": 1}


def test_current_state_reports_latest_and_active(ctx):
    from drafts.services import draft_activate

    call(CREATE_MUSIC_DRAFT, ctx, prompt="calm acoustic guitar")
    call(
        CREATE_MUSIC_DRAFT,
        ToolContext(ad=ctx.ad, run_id=ctx.run_id, tool_call_id="2:b"),
        prompt="upbeat pop",
    )
    draft_activate(ad=ctx.ad, draft_id=Draft.objects.get(kind="music", version=1).pk)

    state = call(GET_CURRENT_STATE, ctx)

    assert state == {
        "music": {
            "versionId": "v2",
            "summary": "Music (loudly), 30 s: upbeat pop",
            "active": "v1",
            "activeSummary": "Music (loudly), 30 s: calm acoustic guitar",
        }
    }
