"""The Kimi (Moonshot) profile on the OpenAI-compatible adapter, over HTTP."""

from __future__ import annotations

import pytest

from providers.base import (
    GenerateOptions,
    GenerateRequest,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from providers.profiles import KIMI
from testbed.fake_openai import call, turn

TOOLS = (
    ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
    ToolSpec("create_music_draft", "Music draft.", {"type": "object", "properties": {}}),
)
BRIEF = UserMessage("Brief\nClient: 网易云音乐\nLanguage: zh\nDuration: 20 s")


def ask(messages=(BRIEF,), **options) -> GenerateRequest:
    return GenerateRequest(
        model="kimi-k2-thinking",
        system="You are the creative director.",
        messages=tuple(messages),
        tools=TOOLS,
        options=GenerateOptions(stream=True, **options),
    )


def test_default_base_url():
    assert KIMI.default_base_url == "https://api.moonshot.ai/v1"


def test_repeated_index_is_reindexed_and_ids_echoed_byte_for_byte_with_reasoning(fake_openai):
    ids = ["functions.search_voices:0", "functions.create_music_draft:1"]
    fake_openai.script(
        turn(
            tool_calls=[
                call("search_voices", {"language": "zh"}, id=ids[0]),
                call("create_music_draft", {"prompt": "轻快的钢琴"}, id=ids[1]),
            ],
            index="zero",  # both calls streamed at index 0, told apart by their ids
            reasoning_content="The brief is Chinese; search zh voices and draft music.",
            usage_in_choice=True,
        ),
        turn("好的。"),
    )
    adapter = fake_openai.adapter("kimi")

    first = adapter.generate(ask())
    results = tuple(
        ToolResultMessage(c.id, c.name, '{"ok": true}') for c in first.message.tool_calls
    )
    adapter.generate(ask(messages=(BRIEF, first.message, *results)))

    assert [c.id for c in first.message.tool_calls] == ids
    assert [c.arguments for c in first.message.tool_calls] == [
        {"language": "zh"},
        {"prompt": "轻快的钢琴"},
    ]
    assert first.message.provider_data["reasoning_content"].startswith("The brief is Chinese")
    replay = fake_openai.requests[1]["messages"]
    assert [c["id"] for c in replay[2]["tool_calls"]] == ids
    assert replay[2]["reasoning_content"] == first.message.provider_data["reasoning_content"]
    assert [m["tool_call_id"] for m in replay[3:]] == ids
    assert [m["name"] for m in replay[3:]] == ["search_voices", "create_music_draft"]


def test_usage_inside_the_choice_with_cached_tokens(fake_openai):
    fake_openai.script(
        turn(
            "ok",
            usage_in_choice=True,
            usage={
                "prompt_tokens": 900,
                "completion_tokens": 12,
                "total_tokens": 912,
                "cached_tokens": 768,
            },
        )
    )

    response = fake_openai.adapter("kimi").generate(ask())

    assert "stream_options" not in fake_openai.requests[0]
    assert response.usage.prompt_tokens == 900
    assert response.usage.cached_prompt_tokens == 768


@pytest.mark.parametrize(("asked", "sent"), [(1.7, 1.0), (-0.5, 0.0), (0.6, 0.6)])
def test_temperature_is_clamped_to_moonshots_range(fake_openai, asked, sent):
    fake_openai.script(turn("ok"))

    fake_openai.adapter("kimi").generate(ask(temperature=asked))

    assert fake_openai.requests[0]["temperature"] == sent


def test_required_tool_choice_is_never_sent(fake_openai):
    fake_openai.script(turn("ok"))

    fake_openai.adapter("kimi").generate(ask(tool_choice="required"))

    assert fake_openai.requests[0]["tool_choice"] == "auto"
