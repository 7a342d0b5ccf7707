"""The offline demo director: plans through the tools, reacts to follow-ups, deterministic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adstudio.speaking_time import spoken_seconds
from providers.base import (
    GenerateOptions,
    GenerateRequest,
    Message,
    ModelResponse,
    StopReason,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from providers.demo import DemoProvider, parse_brief

TOOLS = tuple(
    ToolSpec(name, name, {"type": "object", "properties": {}})
    for name in (
        "search_voices",
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
        "set_ad_length",
        "get_current_state",
    )
)
BRIEF = (
    "Brief\nClient: Spotify Premium family plan\nAudience: Thai families\nLanguage: th\n"
    "Market: TH\nDuration: 30 s\nContext: Launch of the family plan in Thailand."
)
VOICES = [
    {"id": "11", "name": "Ploy", "language": "th", "gender": "female"},
    {"id": "12", "name": "Mali", "language": "th", "gender": "female"},
    {"id": "21", "name": "Somchai", "language": "th", "gender": "male"},
    {"id": "22", "name": "Anan", "language": "th", "gender": "male"},
]


class Tools:
    """A stand-in for the real tools: results shaped like theirs, versions counted per kind."""

    def __init__(self, voices: list[dict[str, Any]] | None = None) -> None:
        self.voices = VOICES if voices is None else voices
        self.versions = {"voices": 0, "music": 0, "sfx": 0}

    def run(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "search_voices":
            found = [
                v
                for v in self.voices
                if v["language"] == args["language"] and args.get("gender") in (None, v["gender"])
            ]
            if not found:
                return {"error": "no voices match", "suggestion": "drop the gender filter"}
            return {"voices": found[: args.get("count", 10)]}
        if name == "set_ad_length":
            return {"durationSeconds": args["durationSeconds"], "previousSeconds": 30}
        kind = {"create_voice_draft": "voices", "create_music_draft": "music"}.get(name, "sfx")
        self.versions[kind] += 1
        version = f"v{self.versions[kind]}"
        result = {"versionId": version, "kind": kind, "status": "draft"}
        if kind == "voices":
            result["estimatedDurationS"] = 24.5
        return result


def play_turn(
    history: list[Message], text: str, tools: Tools, *, rounds: int = 6
) -> list[ModelResponse]:
    """Run one user turn like the loop does; return the responses of its rounds."""
    demo = DemoProvider()
    history.append(UserMessage(text))
    responses = []
    for _ in range(rounds):
        request = GenerateRequest(model="", system="s", messages=tuple(history), tools=TOOLS)
        response = demo.generate(request)
        responses.append(response)
        history.append(response.message)
        for c in response.message.tool_calls:
            result = tools.run(c.name, c.arguments)
            history.append(
                ToolResultMessage(c.id, c.name, json.dumps(result), is_error="error" in result)
            )
        if not response.message.tool_calls:
            break
    return responses


def calls_of(response: ModelResponse) -> dict[str, dict[str, Any]]:
    return {c.name: c.arguments for c in response.message.tool_calls}


def test_parse_brief():
    brief = parse_brief(BRIEF)

    assert brief is not None
    assert (brief.client, brief.language, brief.market, brief.duration) == (
        "Spotify Premium family plan",
        "th",
        "TH",
        30,
    )
    assert parse_brief("Brief\nLanguage: th") is None
    assert parse_brief("Brief\nLanguage: es\nDuration: 15 s").client == "your brand"


def test_first_turn_searches_then_drafts_in_parallel_then_summarises():
    history: list[Message] = []

    first, second, third = play_turn(history, BRIEF, Tools())

    # a cast of both genders, the market's own voices
    assert [(c.name, c.arguments) for c in first.message.tool_calls] == [
        ("search_voices", {"language": "th", "count": 6, "accent": "th-TH", "gender": g})
        for g in ("female", "male")
    ]
    assert first.stop_reason is StopReason.TOOL_CALLS
    assert [c.name for c in second.message.tool_calls] == [
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
    ]
    assert [c.id for c in second.message.tool_calls] == [
        "demo_t1_r2_1",
        "demo_t1_r2_2",
        "demo_t1_r2_3",
    ]
    drafts = calls_of(second)
    voice_ids = {t["voiceId"] for t in drafts["create_voice_draft"]["tracks"]}
    assert voice_ids == {"11", "21"}  # one female, one male
    assert drafts["create_music_draft"]["duration"] == 30
    assert drafts["create_sfx_draft"]["prompts"][0]["placement"] == {"type": "start"}
    assert third.stop_reason is StopReason.END_TURN
    assert "offline demo director" in third.message.text
    assert "OPENAI_API_KEY" in third.message.text
    assert "- Voices v1: 4 script lines read by 2 voices, about 24.5 s." in third.message.text
    assert "- Music v1: Warm, modern instrumental background music at 100 bpm" in third.message.text
    assert (third.provider, third.usage.exact) == ("demo", False)


@pytest.mark.parametrize(
    ("language", "duration", "says"),
    [
        ("en", 30, "Meet Spotify Premium."),
        ("es", 15, "Conoce Spotify Premium."),
        ("th", 30, "พบกับ Spotify Premium"),
        ("zh", 60, "认识一下Spotify Premium。"),
        ("ja", 30, "Spotify Premiumをご紹介します。"),
        ("it", 30, "Scopri Spotify Premium."),
        ("fi", 30, "Meet Spotify Premium."),  # no lines of its own: English, and said
    ],
)
def test_the_script_is_in_the_ads_language_and_fills_the_slot(language, duration, says):
    brief = BRIEF.replace("Language: th", f"Language: {language}").replace(
        "Duration: 30 s", f"Duration: {duration} s"
    )
    history: list[Message] = []

    _, drafts, _ = play_turn(history, brief, Tools([{**v, "language": language} for v in VOICES]))

    lines = [t["text"] for t in calls_of(drafts)["create_voice_draft"]["tracks"]]
    seconds = sum(spoken_seconds(line, language=language) for line in lines)
    assert 0.8 * duration <= seconds <= 0.95 * duration
    assert lines[0].startswith(says) and "Spotify Premium" in lines[-1]


def test_same_history_same_answer():
    a: list[Message] = []
    b: list[Message] = []

    assert play_turn(a, BRIEF, Tools()) == play_turn(b, BRIEF, Tools())


def test_no_voices_for_the_language_ends_with_a_clear_message():
    history: list[Message] = []

    first, retried, second = play_turn(history, BRIEF, Tools(voices=[]))

    assert len(first.message.tool_calls) == 2  # by gender, in the market's locale
    assert calls_of(retried) == {"search_voices": {"language": "th", "count": 6}}  # unfiltered
    assert second.message.tool_calls == ()
    assert "could not find voices for language 'th'" in second.message.text
    assert "drop the gender filter" in second.message.text


def test_music_follow_up_makes_only_a_new_music_draft():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    drafts, summary = play_turn(history, "Make the music more upbeat and playful", tools)

    assert list(calls_of(drafts)) == ["create_music_draft"]
    assert drafts.message.tool_calls[0].id == "demo_t2_r1_1"
    prompt = calls_of(drafts)["create_music_draft"]["prompt"].lower()
    assert "upbeat" in prompt and "playful" in prompt
    assert "Music v2" in summary.message.text


def test_voice_follow_up_searches_for_the_gender_and_swaps_voices():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    search, drafts, _ = play_turn(history, "Use male voices instead", tools)

    assert calls_of(search) == {
        "search_voices": {"language": "th", "count": 6, "gender": "male", "accent": "th-TH"}
    }
    tracks = calls_of(drafts)["create_voice_draft"]["tracks"]
    assert {t["voiceId"] for t in tracks} == {"21", "22"}


def test_swapping_one_voice_keeps_the_other():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)  # Ploy (11, female) and Somchai (21, male)

    _, drafts, _ = play_turn(history, "Swap the female voice for another one", tools)

    tracks = calls_of(drafts)["create_voice_draft"]["tracks"]
    assert {t["voiceId"] for t in tracks} == {"12", "21"}
    assert list(calls_of(drafts)) == ["create_voice_draft"]


def test_voice_search_with_a_filter_that_finds_nothing_is_retried_without_it():
    history: list[Message] = []
    female_only = Tools([v for v in VOICES if v["gender"] == "female"])
    play_turn(history, BRIEF, female_only)

    failed, retried, drafts, _ = play_turn(history, "I want a male narrator", female_only)

    assert calls_of(failed)["search_voices"]["gender"] == "male"
    assert calls_of(retried) == {"search_voices": {"language": "th", "count": 6}}
    assert "create_voice_draft" in calls_of(drafts)


def test_shorter_resizes_voices_and_music():
    history: list[Message] = []
    tools = Tools()
    _, first_drafts, _ = play_turn(history, BRIEF, tools)

    drafts, _ = play_turn(history, "Can you make it shorter?", tools)

    new = calls_of(drafts)
    old_words = sum(len(t["text"]) for t in calls_of(first_drafts)["create_voice_draft"]["tracks"])
    new_words = sum(len(t["text"]) for t in new["create_voice_draft"]["tracks"])
    assert new["create_music_draft"]["duration"] == 20
    assert new_words < old_words
    # the same voices are kept: nothing asked to change them
    assert {t["voiceId"] for t in new["create_voice_draft"]["tracks"]} == {"11", "21"}


def test_longer_and_an_explicit_duration():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    longer, _ = play_turn(history, "Make it longer", tools)
    exact, _ = play_turn(history, "Actually make it 15 seconds", tools)

    assert calls_of(longer)["create_music_draft"]["duration"] == 45
    assert calls_of(exact)["create_music_draft"]["duration"] == 15


def test_more_energy_changes_music_and_script():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    drafts, _ = play_turn(history, "It needs more energy!", tools)

    new = calls_of(drafts)
    assert "high-energy" in new["create_music_draft"]["prompt"].lower()
    assert all(t["text"].endswith("!") for t in new["create_voice_draft"]["tracks"])


def test_sfx_follow_up_gives_different_effects():
    history: list[Message] = []
    tools = Tools()
    _, first_drafts, _ = play_turn(history, BRIEF, tools)

    drafts, _ = play_turn(history, "Try different sound effects", tools)

    assert list(calls_of(drafts)) == ["create_sfx_draft"]
    assert calls_of(drafts) != {"create_sfx_draft": calls_of(first_drafts)["create_sfx_draft"]}


def test_an_unclear_follow_up_gets_a_question_not_a_draft():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    (answer,) = play_turn(history, "Hmm, what do you think?", tools)

    assert answer.message.tool_calls == ()
    assert "Which would you like?" in answer.message.text


def test_the_loops_final_round_gets_the_summary_of_the_turn():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools, rounds=2)  # cut before the summary
    history.append(UserMessage("Stop calling tools and give your final answer now."))
    request = GenerateRequest(
        model="",
        system="s",
        messages=tuple(history),
        tools=TOOLS,
        options=GenerateOptions(tool_choice="none"),
    )

    response = DemoProvider().generate(request)

    assert response.message.tool_calls == ()
    assert "Voices v1" in response.message.text


def test_without_tools_it_answers_in_text():
    request = GenerateRequest(
        model="", system="Summarise.", messages=(UserMessage("user asked for upbeat music"),)
    )

    response = DemoProvider().generate(request)

    assert response.message.tool_calls == ()
    assert "user asked for upbeat music" in response.message.text


def test_text_reaches_on_text():
    seen: list[str] = []
    history: list[Message] = [UserMessage("Hello?")]

    DemoProvider().generate(
        GenerateRequest(model="", system="s", messages=tuple(history), tools=TOOLS),
        on_text=seen.append,
    )

    assert seen and "MOONSHOT_API_KEY" in seen[0]


def test_music_with_more_energy_leaves_the_script_alone():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    drafts, _ = play_turn(history, "The music needs more energy", tools)

    assert list(calls_of(drafts)) == ["create_music_draft"]


def test_thanks_is_not_mistaken_for_a_request():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    (answer,) = play_turn(history, "Sounds great, thanks!", tools)

    assert answer.message.tool_calls == ()


@pytest.mark.parametrize(
    ("asked", "shorter"), [("The script is too long", True), ("Make the lines longer", False)]
)
def test_a_shorter_or_longer_script_keeps_the_ads_length(asked, shorter):
    history: list[Message] = []
    tools = Tools()
    _, first, _ = play_turn(history, BRIEF, tools)

    drafts, _ = play_turn(history, asked, tools)

    def seconds(response) -> float:
        tracks = calls_of(response)["create_voice_draft"]["tracks"]
        return sum(spoken_seconds(t["text"], language="th") for t in tracks)

    assert list(calls_of(drafts)) == ["create_voice_draft"]  # the music keeps its 30 s
    assert (seconds(drafts) < seconds(first)) is shorter
    assert 0.75 * 30 <= seconds(drafts) <= 30


def test_calmer_music_slows_down_and_no_sound_effects_is_an_empty_version():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    calmer, _ = play_turn(history, "Make the music calmer", tools)
    none, summary = play_turn(history, "No sound effects, please", tools)

    assert calls_of(calmer)["create_music_draft"]["prompt"].startswith(
        "Calm, relaxed instrumental background music at 84 bpm"
    )
    assert calls_of(none) == {"create_sfx_draft": {"prompts": []}}
    assert "Sound effects v2" in summary.message.text


AGED_VOICES = [
    {"id": "31", "name": "Nok", "language": "th", "gender": "female", "age": "young"},
    {"id": "32", "name": "Pim", "language": "th", "gender": "female", "age": "old"},
    {"id": "41", "name": "Lek", "language": "th", "gender": "male", "age": "old"},
    {"id": "42", "name": "Chai", "language": "th", "gender": "male", "age": "middle aged"},
    {"id": "43", "name": "Ton", "language": "th", "gender": "male", "age": "young"},
]


def _bpm(response: ModelResponse) -> int:
    prompt = calls_of(response)["create_music_draft"]["prompt"]
    return int(prompt.split(" bpm")[0].rsplit(" ", 1)[1])


@pytest.mark.parametrize(
    ("message", "step"),
    [
        ("Make the music less energetic.", -16),
        ("Can the music be a little less intense?", -16),
        ("The music is way too hyper", -16),
        ("The music sounds too relaxed, more energy", 16),
        ("Not calm at all please, make the music livelier", 16),
        ("Mach die Musik ruhiger", -16),
    ],
)
def test_the_music_moves_the_way_the_person_asked(message, step):
    history: list[Message] = []
    tools = Tools()
    _, first, _ = play_turn(history, BRIEF, tools)

    changed, _ = play_turn(history, message, tools)

    assert list(calls_of(changed)) == ["create_music_draft"]
    assert _bpm(changed) - _bpm(first) == step
    prompt = calls_of(changed)["create_music_draft"]["prompt"].lower()
    unwanted = "upbeat" if step < 0 else "calm"
    assert unwanted not in prompt


def test_a_new_length_changes_the_ads_slot_and_redrafts_to_fit():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    changed, summary = play_turn(history, "Make it 20 seconds.", tools)

    calls = calls_of(changed)
    assert calls["set_ad_length"] == {"durationSeconds": 20}
    assert calls["create_music_draft"]["duration"] == 20
    lines = [t["text"] for t in calls["create_voice_draft"]["tracks"]]
    assert sum(spoken_seconds(line, language="th") for line in lines) <= 20
    assert "create_sfx_draft" not in calls
    assert "- Length: now 20 s (was 30 s)." in summary.message.text
    # The next turn measures against the new slot.
    again, _ = play_turn(history, "Make the music calmer", tools)
    assert calls_of(again)["create_music_draft"]["duration"] == 20


def test_a_fact_asked_for_is_said_in_every_script_after():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    asked, _ = play_turn(history, "Mention the price 199 baht", tools)
    later, _ = play_turn(history, "The script is too long, make it shorter.", tools)

    for response in (asked, later):
        lines = [t["text"] for t in calls_of(response)["create_voice_draft"]["tracks"]]
        assert "199 baht" in lines[-1]
    assert list(calls_of(asked)) == ["create_voice_draft"]


def test_a_voice_asked_to_sound_younger_is_swapped_for_a_younger_one():
    history: list[Message] = []
    brief = BRIEF.replace("Context: Launch", "Context: An older male voice. Launch")
    tools = Tools(voices=AGED_VOICES)
    _, first, _ = play_turn(history, brief, tools)
    first_ids = [t["voiceId"] for t in calls_of(first)["create_voice_draft"]["tracks"]]
    assert first_ids[0] == "41"  # the old man, as the brief asked

    search, swapped, _ = play_turn(history, "the guy sounds too old", tools)
    assert calls_of(search)["search_voices"]["gender"] == "male"

    ids = {t["voiceId"] for t in calls_of(swapped)["create_voice_draft"]["tracks"]}
    assert "41" not in ids
    assert ids & {"42", "43"}


def test_a_question_to_drop_the_effects_empties_them():
    history: list[Message] = []
    tools = Tools()
    play_turn(history, BRIEF, tools)

    dropped, _ = play_turn(history, "Get rid of the sound effects?", tools)

    assert calls_of(dropped) == {"create_sfx_draft": {"prompts": []}}


def test_taiwan_reads_traditional_characters():
    brief = BRIEF.replace("Language: th", "Language: zh").replace("Market: TH", "Market: TW")
    history: list[Message] = []

    _, drafts, _ = play_turn(history, brief, Tools([{**v, "language": "zh"} for v in VOICES]))

    text = "".join(t["text"] for t in calls_of(drafts)["create_voice_draft"]["tracks"])
    assert "認識" in text and "认识" not in text


def test_a_language_without_lines_is_an_english_placeholder_said_so():
    brief = BRIEF.replace("Language: th", "Language: fi")
    history: list[Message] = []

    *_, summary = play_turn(history, brief, Tools([{**v, "language": "fi"} for v in VOICES]))

    assert "English placeholder" in summary.message.text
