"""The Qwen (DashScope compatible mode) profile on the OpenAI-compatible adapter, over HTTP."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from providers.base import (
    ContentFiltered,
    GenerateOptions,
    GenerateRequest,
    RateLimited,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from providers.profiles import QWEN
from testbed.fake_openai import call, error_turn, turn


class Track(BaseModel):
    voiceId: str
    text: str


class VoiceDraft(BaseModel):
    tracks: list[Track]


TOOLS = (
    ToolSpec("create_voice_draft", "Write a voice draft.", VoiceDraft.model_json_schema()),
    ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
)
BRIEF = UserMessage("Brief\nClient: Spotify Premium family plan\nLanguage: th\nDuration: 30 s")


def ask(messages=(BRIEF,), **options) -> GenerateRequest:
    return GenerateRequest(
        model="qwen-plus",
        system="You are the creative director.",
        messages=tuple(messages),
        tools=TOOLS,
        options=GenerateOptions(**options),
    )


def test_default_base_url_is_the_international_compatible_mode():
    assert QWEN.default_base_url == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"


def test_no_streaming_when_tools_may_be_called_in_parallel(fake_openai):
    fake_openai.script(turn("Searching.", tool_calls=[call("search_voices", {"language": "th"})]))
    deltas: list[str] = []

    response = fake_openai.adapter("qwen").generate(
        ask(stream=True, parallel_tool_calls=True), on_text=deltas.append
    )

    body = fake_openai.requests[0]
    assert "stream" not in body and body["parallel_tool_calls"] is True
    assert deltas == ["Searching."]  # the text still reaches the caller, in one piece
    assert response.message.tool_calls[0].arguments == {"language": "th"}


def test_streams_when_parallel_calls_are_off(fake_openai):
    fake_openai.script(
        turn("Hi", tool_calls=[call("search_voices", {"language": "th"})], ids="repeat")
    )

    response = fake_openai.adapter("qwen").generate(ask(stream=True, parallel_tool_calls=False))

    assert fake_openai.requests[0]["stream"] is True
    assert response.message.tool_calls[0].id == "call_fake_1_0"  # not doubled


def test_request_shape_plain_strings_cached_system_and_inlined_schemas(fake_openai):
    fake_openai.script(turn("ok"))

    fake_openai.adapter("qwen").generate(ask())

    body = fake_openai.requests[0]
    assert body["messages"][0]["content"] == [
        {
            "type": "text",
            "text": "You are the creative director.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert isinstance(body["messages"][1]["content"], str)
    assert "$defs" not in json.dumps(body["tools"]) and "$ref" not in json.dumps(body["tools"])
    assert [t["function"]["name"] for t in body["tools"]] == ["create_voice_draft", "search_voices"]


MALFORMED = [
    ("trailing comma", '{"language": "th", "count": 4,}', {"language": "th", "count": 4}),
    (
        "single quotes",
        "{'language': 'th', 'style': \"don't shout\"}",
        {"language": "th", "style": "don't shout"},
    ),
    ("unquoted keys", '{language: "th"}', {"language": "th"}),
    ("truncated", '{"language": "th", "gender": "fem', {"language": "th", "gender": "fem"}),
    ("markdown fence", '```json\n{"language": "th"}\n```', {"language": "th"}),
    ("empty string", "", {}),
]


@pytest.mark.parametrize(("label", "raw", "expected"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_arguments_are_repaired_and_replayed_as_valid_json(
    fake_openai, label, raw, expected
):
    fake_openai.script(turn(tool_calls=[call("search_voices", raw=raw)]), turn("Done."))
    adapter = fake_openai.adapter("qwen")

    first = adapter.generate(ask())
    (search,) = first.message.tool_calls
    adapter.generate(
        ask(messages=(BRIEF, first.message, ToolResultMessage(search.id, search.name, "{}")))
    )

    assert search.arguments == expected
    assert search.raw_arguments == raw
    assert search.parse_error is None
    replayed = fake_openai.requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(replayed) == expected  # the fake rejects a request replaying broken JSON


def test_arguments_that_cannot_be_repaired_become_a_parse_error(fake_openai):
    fake_openai.script(turn(tool_calls=[call("search_voices", raw="search Thai voices please")]))

    response = fake_openai.adapter("qwen").generate(ask())

    (search,) = response.message.tool_calls
    assert search.arguments == {}
    assert "not valid JSON" in search.parse_error
    assert search.raw_arguments == "search Thai voices please"


def test_cached_tokens_are_reported(fake_openai):
    fake_openai.script(
        turn(
            "ok",
            usage={
                "prompt_tokens": 3019,
                "completion_tokens": 104,
                "total_tokens": 3123,
                "prompt_tokens_details": {"cached_tokens": 2048, "cache_creation_input_tokens": 0},
            },
        )
    )

    response = fake_openai.adapter("qwen").generate(ask())

    assert response.usage.prompt_tokens == 3019
    assert response.usage.cached_prompt_tokens == 2048


def test_moderation_refusal_is_content_filtered(fake_openai):
    fake_openai.script(
        error_turn(
            400,
            {
                "error": {
                    "message": "Input data may contain inappropriate content.",
                    "type": "data_inspection_failed",
                    "param": None,
                    "code": "data_inspection_failed",
                }
            },
        )
    )

    with pytest.raises(ContentFiltered) as caught:
        fake_openai.adapter("qwen").generate(ask())
    assert caught.value.provider_code == "data_inspection_failed"


def test_throttling_is_a_retryable_rate_limit(fake_openai):
    fake_openai.script(
        error_turn(
            429, {"code": "Throttling.RateQuota", "message": "Requests rate limit exceeded."}
        )
    )

    with pytest.raises(RateLimited) as caught:
        fake_openai.adapter("qwen").generate(ask())
    assert caught.value.retryable
