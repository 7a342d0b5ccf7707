"""The Messages wire format without a server: tool-call ids, message translation, cache
breakpoints, stop reasons, usage and the assembly of streamed events."""

from __future__ import annotations

import json

import pytest

from providers.anthropic_format import (
    CONTINUED,
    MISSING_RESULT,
    TOOL_ID_PATTERN,
    TRUNCATED_CALL,
    MessageAssembler,
    build_messages,
    build_params,
    stop_reason,
    usage_from,
    wire_tool_id,
)
from providers.base import (
    AssistantMessage,
    GenerateOptions,
    GenerateRequest,
    StopReason,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from providers.profiles import ANTHROPIC
from testbed.fake_anthropic import messages_protocol_problems

TOOLS = (
    ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
    ToolSpec("create_music_draft", "Music draft.", {"type": "object", "properties": {}}),
)
BRIEF = UserMessage("Brief\nClient: Spotify\nLanguage: en")


def tool_call(call_id: str, name: str = "search_voices", **arguments) -> ToolCall:
    return ToolCall(call_id, name, arguments, json.dumps(arguments))


def result(call: ToolCall, content: str = '{"ok": true}', *, is_error: bool = False):
    return ToolResultMessage(call.id, call.name, content, is_error=is_error)


def request(*messages, **options) -> GenerateRequest:
    return GenerateRequest(
        model="claude-sonnet-4-6",
        system="You are the creative director.",
        messages=tuple(messages),
        tools=TOOLS,
        options=GenerateOptions(**options),
    )


# --- ids -------------------------------------------------------------------------------


@pytest.mark.parametrize("valid", ["toolu_01A09q90qw90lq917835lq9", "call_abc", "call-1_X"])
def test_valid_ids_go_out_unchanged(valid):
    assert wire_tool_id(valid) == valid


@pytest.mark.parametrize("original", ["functions.search_voices:0", "call abc", "x/y", "ü", ""])
def test_invalid_ids_map_to_the_same_valid_id_every_time(original):
    mapped = wire_tool_id(original)

    assert TOOL_ID_PATTERN.fullmatch(mapped)
    assert mapped != original
    assert wire_tool_id(original) == mapped


def test_kimi_ids_keep_a_readable_stem():
    assert wire_tool_id("functions.search_voices:0").startswith("functions_search_voices_0_")


def test_ids_that_sanitise_alike_do_not_collide():
    # all of these become "functions_a_0" once the invalid characters are replaced
    originals = [
        "functions.a:0",
        "functions:a:0",
        "functions.a.0",
        "functions a 0",
        "functions_a_0",
    ]

    mapped = [wire_tool_id(o) for o in originals]

    assert len(set(mapped)) == len(originals)
    assert mapped[-1] == "functions_a_0"  # the valid one is kept as it is


def test_an_id_reused_across_rounds_gets_a_unique_wire_id_and_its_results_follow():
    first, second = tool_call("functions.search_voices:0"), tool_call("functions.search_voices:0")
    reused, again = tool_call("call_1"), tool_call("call_1")
    history = [
        BRIEF,
        AssistantMessage(tool_calls=(first, reused)),
        result(first),
        result(reused),
        AssistantMessage(tool_calls=(second, again)),
        result(second),
        result(again),
    ]

    wire = build_messages(history)

    round_one = [b["id"] for b in wire[1]["content"]]
    round_two = [b["id"] for b in wire[3]["content"]]
    assert round_one[1] == "call_1"  # first occurrence of a valid id: unchanged
    assert len(set(round_one + round_two)) == 4  # Anthropic wants unique ids per request
    assert [b["tool_use_id"] for b in wire[2]["content"]] == round_one
    assert [b["tool_use_id"] for b in wire[4]["content"]] == round_two
    assert build_messages(history) == wire  # deterministic: the prompt cache still hits
    assert not messages_protocol_problems({"max_tokens": 1, "tools": [{}], "messages": wire})


# --- messages --------------------------------------------------------------------------


def test_tool_results_of_a_turn_go_back_together_in_one_user_message():
    calls = (tool_call("call_a"), tool_call("call_b", "create_music_draft"), tool_call("call_c"))
    history = [
        BRIEF,
        AssistantMessage("Let me look.", tool_calls=calls),
        result(calls[0]),
        result(calls[1], '{"error": "bad prompt"}', is_error=True),
        result(calls[2]),
    ]

    wire = build_messages(history)

    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert wire[1]["content"][0] == {"type": "text", "text": "Let me look."}
    assert [b["type"] for b in wire[1]["content"][1:]] == ["tool_use"] * 3
    blocks = wire[2]["content"]
    assert [(b["type"], b["tool_use_id"], b.get("is_error")) for b in blocks] == [
        ("tool_result", "call_a", None),
        ("tool_result", "call_b", True),
        ("tool_result", "call_c", None),
    ]
    assert blocks[1]["content"] == '{"error": "bad prompt"}'


def test_a_user_message_after_tool_results_joins_them_after_the_results():
    call = tool_call("call_a")
    history = [BRIEF, AssistantMessage(tool_calls=(call,)), result(call), UserMessage("Now stop.")]

    wire = build_messages(history)

    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert [b["type"] for b in wire[2]["content"]] == ["tool_result", "text"]
    assert wire[2]["content"][1]["text"] == "Now stop."


def test_an_empty_assistant_message_is_left_out_and_the_user_turns_around_it_merge():
    history = [BRIEF, AssistantMessage(text="  "), UserMessage("Hello?")]

    wire = build_messages(history)

    assert wire == [
        {
            "role": "user",
            "content": [{"type": "text", "text": BRIEF.text}, {"type": "text", "text": "Hello?"}],
        }
    ]


def test_a_call_without_result_is_answered_and_an_orphan_result_is_left_out():
    call = tool_call("call_a")
    stray = ToolResultMessage("call_zzz", "search_voices", "{}")
    history = [BRIEF, AssistantMessage(tool_calls=(call,)), stray, UserMessage("Go on.")]

    wire = build_messages(history)

    assert wire[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_a",
            "content": MISSING_RESULT,
            "is_error": True,
        },
        {"type": "text", "text": "Go on."},
    ]


def test_a_history_that_starts_with_the_model_gets_a_user_message_first():
    wire = build_messages([AssistantMessage("Earlier answer."), UserMessage("Next.")])

    assert wire[0] == {"role": "user", "content": [{"type": "text", "text": CONTINUED}]}
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]


def test_the_system_prompt_is_the_system_parameter_never_a_message():
    params = build_params(request(BRIEF), ANTHROPIC, stream=True)

    assert params["system"] == [
        {
            "type": "text",
            "text": "You are the creative director.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert {m["role"] for m in params["messages"]} == {"user"}
    assert params["stream"] is True


def test_cache_breakpoints_sit_on_the_last_tool_the_system_and_the_newest_block_only():
    call = tool_call("call_a")
    first = build_params(request(BRIEF), ANTHROPIC, stream=False)
    later = build_params(
        request(BRIEF, AssistantMessage(tool_calls=(call,)), result(call)), ANTHROPIC, stream=False
    )

    assert [t["name"] for t in later["tools"]] == ["create_music_draft", "search_voices"]
    assert ["cache_control" in t for t in later["tools"]] == [False, True]
    marked = [
        (i, j)
        for i, m in enumerate(later["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    assert marked == [(2, 0)]
    # the stable prefix is the same bytes on every turn
    assert json.dumps(first["tools"]) == json.dumps(later["tools"])
    assert first["system"] == later["system"]
    assert "stream" not in first


def test_tool_use_input_is_sent_with_sorted_keys():
    call = ToolCall("call_a", "create_music_draft", {"prompt": "pop", "bpm": 90}, "")

    wire = build_messages([BRIEF, AssistantMessage(tool_calls=(call,)), result(call)])

    assert json.dumps(wire[1]["content"][0]["input"]) == '{"bpm": 90, "prompt": "pop"}'


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, None),
        ({"tool_choice": "required"}, {"type": "any"}),
        ({"tool_choice": "none"}, {"type": "none"}),
        ({"parallel_tool_calls": False}, {"type": "auto", "disable_parallel_tool_use": True}),
    ],
)
def test_tool_choice(options, expected):
    params = build_params(request(BRIEF, **options), ANTHROPIC, stream=False)

    assert params.get("tool_choice") == expected


def test_max_tokens_is_always_sent_and_temperature_clamped_to_one():
    default = build_params(request(BRIEF, temperature=1.7), ANTHROPIC, stream=False)
    explicit = build_params(request(BRIEF, max_tokens=300), ANTHROPIC, stream=False)

    assert default["max_tokens"] == 8192 and default["temperature"] == 1.0
    assert explicit["max_tokens"] == 300


# --- responses -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "has_calls", "expected"),
    [
        ("tool_use", True, StopReason.TOOL_CALLS),
        ("end_turn", False, StopReason.END_TURN),
        ("max_tokens", True, StopReason.MAX_TOKENS),
        ("model_context_window_exceeded", False, StopReason.MAX_TOKENS),
        ("refusal", False, StopReason.CONTENT_FILTER),
        ("stop_sequence", False, StopReason.END_TURN),
    ],
)
def test_stop_reasons(raw, has_calls, expected):
    assert stop_reason(raw, has_tool_calls=has_calls) == expected


def test_usage_counts_cached_and_written_tokens_as_input_once():
    usage = usage_from(
        {
            "input_tokens": 50,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 40,
        }
    )

    assert usage is not None
    assert (usage.prompt_tokens, usage.cached_prompt_tokens, usage.cache_creation_tokens) == (
        3250,
        3000,
        200,
    )
    assert usage.completion_tokens == 40 and usage.exact
    assert usage_from({"output_tokens": 3}) is None  # no input count: estimate instead


def events(*items: dict) -> MessageAssembler:
    assembler = MessageAssembler(id_factory=lambda: "call_generated")
    for item in items:
        assembler.add_event(item)
    return assembler


def block_start(index: int, call_id: str, name: str) -> dict:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
    }


def json_delta(index: int, partial: str) -> dict:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "input_json_delta", "partial_json": partial},
    }


def message_delta(stop: str, **usage: int) -> dict:
    return {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage}


def test_interleaved_json_fragments_are_joined_per_block_index():
    assembled = events(
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 9}}},
        block_start(0, "toolu_a", "search_voices"),
        block_start(1, "toolu_b", "create_music_draft"),
        json_delta(1, '{"prompt": '),
        json_delta(0, '{"language"'),
        json_delta(1, '"pop"}'),
        json_delta(0, ': "en"}'),
        message_delta("tool_use", output_tokens=20),
    ).result()

    assert [(c.id, c.arguments) for c in assembled.tool_calls] == [
        ("toolu_a", {"language": "en"}),
        ("toolu_b", {"prompt": "pop"}),
    ]
    assert assembled.usage == {"input_tokens": 9, "output_tokens": 20}


def test_a_call_cut_off_at_max_tokens_is_marked_not_repaired():
    assembled = events(
        block_start(0, "toolu_a", "search_voices"),
        json_delta(0, '{"language": "en"}'),
        block_start(1, "toolu_b", "create_voice_draft"),
        json_delta(1, '{"tracks": [{"voiceId": "1", "text": "One plan for'),
        message_delta("max_tokens", output_tokens=8192),
    ).result()

    complete, cut = assembled.tool_calls
    assert complete.arguments == {"language": "en"} and complete.parse_error is None
    assert cut.arguments == {} and cut.parse_error == TRUNCATED_CALL and not cut.repaired
    assert cut.raw_arguments.endswith("One plan for")


def test_missing_and_repeated_ids_get_generated_ones():
    assembled = events(
        block_start(0, "", "search_voices"),
        block_start(1, "toolu_a", "search_voices"),
        block_start(2, "toolu_a", "search_voices"),
        message_delta("tool_use"),
    ).result()

    assert [c.id for c in assembled.tool_calls] == ["call_generated", "toolu_a", "call_generated"]
    assert all(c.arguments == {} for c in assembled.tool_calls)
