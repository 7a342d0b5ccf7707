"""Requests as each profile puts them on the wire: content shapes, cache markers, schemas,
tool choice, temperature, and a prefix that serialises identically turn after turn.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from providers.base import (
    AssistantMessage,
    GenerateOptions,
    GenerateRequest,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from providers.chat_format import build_payload
from providers.profiles import KIMI, OPENAI, QWEN
from providers.schemas import inline_defs, wire_tools


class Track(BaseModel):
    voiceId: str
    text: str


class VoiceDraftArgs(BaseModel):
    tracks: list[Track]
    lead: Track | None = None


VOICE_TOOL = ToolSpec(
    name="create_voice_draft",
    description="Write a voice draft.",
    parameters=VoiceDraftArgs.model_json_schema(),
)
SEARCH_TOOL = ToolSpec(
    name="search_voices",
    description="Search the catalogue.",
    parameters={"type": "object", "properties": {"language": {"type": "string"}}},
)


def request(model: str = "m", **options) -> GenerateRequest:
    return GenerateRequest(
        model=model,
        system="You are the creative director.",
        messages=(
            UserMessage("Brief\nLanguage: th\nDuration: 30 s"),
            AssistantMessage(
                text="",
                tool_calls=(
                    ToolCall(
                        id="functions.search_voices:0",
                        name="search_voices",
                        arguments={"language": "th"},
                        raw_arguments="{'language': 'th',}",  # broken, repaired earlier
                        repaired=True,
                    ),
                ),
                provider_data={"reasoning_content": "Thai brief: search th.", "provider": "kimi"},
            ),
            ToolResultMessage(
                tool_call_id="functions.search_voices:0",
                name="search_voices",
                content='{"voices": []}',
            ),
        ),
        tools=(VOICE_TOOL, SEARCH_TOOL),
        options=GenerateOptions(**options),
    )


def test_pydantic_defs_are_inlined_for_qwen_and_kept_for_openai():
    assert "$defs" in VOICE_TOOL.parameters  # what pydantic emits for nested models

    qwen = build_payload(request(), QWEN, provider="qwen", stream=False)
    openai = build_payload(request(), OPENAI, provider="openai", stream=False)
    qwen_params = next(t for t in qwen["tools"] if t["function"]["name"] == "create_voice_draft")
    openai_params = next(
        t for t in openai["tools"] if t["function"]["name"] == "create_voice_draft"
    )

    serialized = json.dumps(qwen_params)
    assert "$defs" not in serialized and "$ref" not in serialized
    items = qwen_params["function"]["parameters"]["properties"]["tracks"]["items"]
    assert items["properties"]["voiceId"] == {"title": "Voiceid", "type": "string"}
    assert "$defs" in openai_params["function"]["parameters"]


def test_inline_defs_survives_a_recursive_model():
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }

    inlined = inline_defs(schema)

    assert inlined["type"] == "object"
    assert inlined["properties"]["child"] == {"type": "object"}  # cut, not expanded forever
    assert "$ref" not in json.dumps(inlined)


def test_tools_are_sorted_by_name_whatever_the_registry_order():
    forward = wire_tools((VOICE_TOOL, SEARCH_TOOL), inline=False)
    backward = wire_tools((SEARCH_TOOL, VOICE_TOOL), inline=False)

    assert [t["function"]["name"] for t in forward] == ["create_voice_draft", "search_voices"]
    assert json.dumps(forward) == json.dumps(backward)


@pytest.mark.parametrize(
    ("profile", "model"), [(OPENAI, "gpt-4o"), (QWEN, "qwen-plus"), (KIMI, "kimi-k2")]
)
def test_building_a_payload_leaves_the_tool_specs_as_they_were(profile, model):
    # Payloads share the specs' schema dicts (no copy per call): nothing may change them.
    before = json.dumps([VOICE_TOOL.parameters, SEARCH_TOOL.parameters], sort_keys=True)

    for stream in (True, False):
        payload = build_payload(request(model), profile, provider=profile.name, stream=stream)
        json.dumps(payload)

    assert json.dumps([VOICE_TOOL.parameters, SEARCH_TOOL.parameters], sort_keys=True) == before


def test_qwen_sends_plain_strings_and_a_cached_system_part_where_supported():
    payload = build_payload(request("qwen-plus"), QWEN, provider="qwen", stream=False)
    system, user, assistant, tool = payload["messages"]

    assert system["content"] == [
        {
            "type": "text",
            "text": "You are the creative director.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert user["content"] == "Brief\nLanguage: th\nDuration: 30 s"
    assert assistant["content"] == ""
    assert tool["content"] == '{"voices": []}'


def test_qwen_models_without_list_content_get_a_plain_system_string():
    payload = build_payload(request("qwen-mt-plus"), QWEN, provider="qwen", stream=False)

    assert payload["messages"][0] == {"role": "system", "content": "You are the creative director."}


def test_qwen_model_without_explicit_cache_gets_no_marker():
    payload = build_payload(request("qwen3-235b-a22b"), QWEN, provider="qwen", stream=False)

    assert payload["messages"][0]["content"] == "You are the creative director."


def test_history_replays_repaired_arguments_as_valid_json_not_the_raw_string():
    payload = build_payload(request(), QWEN, provider="qwen", stream=False)
    wire_call = payload["messages"][2]["tool_calls"][0]

    assert wire_call["function"]["arguments"] == '{"language":"th"}'
    assert wire_call["id"] == "functions.search_voices:0"


def test_kimi_echoes_reasoning_and_names_tool_results_openai_does_neither():
    kimi = build_payload(request(), KIMI, provider="kimi", stream=False)
    openai = build_payload(request(), OPENAI, provider="openai", stream=False)

    assert kimi["messages"][2]["reasoning_content"] == "Thai brief: search th."
    assert kimi["messages"][3]["name"] == "search_voices"
    assert "reasoning_content" not in openai["messages"][2]
    assert "name" not in openai["messages"][3]
    assert openai["messages"][2]["content"] is None


def test_kimi_clamps_temperature_and_never_sends_required():
    payload = build_payload(
        request(temperature=1.6, tool_choice="required"), KIMI, provider="kimi", stream=True
    )

    assert payload["temperature"] == 1.0
    assert payload["tool_choice"] == "auto"
    assert "stream_options" not in payload  # Moonshot reports usage in the last choice


def test_openai_keeps_required_and_asks_for_stream_usage():
    payload = build_payload(
        request(temperature=0.3, tool_choice="required", parallel_tool_calls=True, max_tokens=500),
        OPENAI,
        provider="openai",
        stream=True,
    )

    assert payload["tool_choice"] == "required"
    assert payload["parallel_tool_calls"] is True
    assert payload["temperature"] == 0.3
    assert payload["max_completion_tokens"] == 500
    assert payload["stream_options"] == {"include_usage": True}


def test_openai_reasoning_models_get_no_temperature():
    payload = build_payload(
        request("gpt-5.4-mini", temperature=0.2), OPENAI, provider="openai", stream=False
    )

    assert "temperature" not in payload


def test_gemini_thought_signatures_go_back_only_to_the_provider_that_sent_them():
    extra = {"extra_content": {"google": {"thought_signature": "sig"}}}
    message = AssistantMessage(
        tool_calls=(ToolCall(id="c1", name="search_voices", arguments={}, raw_arguments="{}"),),
        provider_data={"provider": "openai", "tool_call_extras": {"c1": extra}},
    )
    req = GenerateRequest(
        model="gemini-2.5-flash",
        system="s",
        messages=(
            UserMessage("hi"),
            message,
            ToolResultMessage(tool_call_id="c1", name="search_voices", content="{}"),
        ),
    )

    same = build_payload(req, OPENAI, provider="openai", stream=False)["messages"][2]
    other = build_payload(req, QWEN, provider="qwen", stream=False)["messages"][2]

    assert same["tool_calls"][0]["extra_content"] == extra["extra_content"]
    assert "extra_content" not in other["tool_calls"][0]


def test_qwen_never_streams_when_parallel_calls_are_possible():
    assert not QWEN.may_stream(has_tools=True, parallel_tool_calls=True)
    assert not QWEN.may_stream(has_tools=True, parallel_tool_calls=None)
    assert QWEN.may_stream(has_tools=True, parallel_tool_calls=False)
    assert QWEN.may_stream(has_tools=False, parallel_tool_calls=None)
    assert OPENAI.may_stream(has_tools=True, parallel_tool_calls=True)


def test_the_request_prefix_is_byte_identical_across_turns():
    first = request()
    later = GenerateRequest(
        model=first.model,
        system=first.system,
        messages=(*first.messages, AssistantMessage(text="Done."), UserMessage("Shorter please")),
        tools=(SEARCH_TOOL, VOICE_TOOL),  # the registry handed them over in another order
    )

    for profile in (OPENAI, QWEN, KIMI):
        a = build_payload(first, profile, provider=profile.name, stream=False)
        b = build_payload(later, profile, provider=profile.name, stream=False)
        prefix_a = json.dumps([a["tools"], a["messages"]], sort_keys=False)
        prefix_b = json.dumps([b["tools"], b["messages"][: len(a["messages"])]], sort_keys=False)
        assert prefix_a == prefix_b, profile.name
