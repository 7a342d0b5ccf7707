"""Usage a provider did not report is estimated, never left at zero; garbled figures are 0."""

from __future__ import annotations

import json

import pytest

from providers import anthropic_format, chat_format
from providers.base import AssistantMessage, ToolCall, Usage, token_count

REPLY = AssistantMessage(
    text="a" * 40,
    tool_calls=(ToolCall(id="call_1", name="x", arguments={}, raw_arguments="{}"),),
)


def test_an_estimate_counts_four_characters_a_token_and_says_it_is_one():
    usage = Usage.estimate(prompt_chars=400, message=REPLY)

    assert (usage.prompt_tokens, usage.completion_tokens, usage.exact) == (100, 10, False)


def test_an_empty_reply_estimates_no_completion_tokens_but_some_prompt():
    usage = Usage.estimate(prompt_chars=2, message=AssistantMessage(text=""))

    assert (usage.prompt_tokens, usage.completion_tokens) == (1, 0)


def test_both_wire_formats_count_the_prompt_they_sent():
    messages = [{"role": "user", "content": "x" * 396}]

    openai = chat_format.estimated_usage({"messages": messages}, REPLY)
    claude = anthropic_format.estimated_usage({"system": "s" * 400, "messages": messages}, REPLY)

    # the JSON sent (messages and an empty tool list), not only the messages' text
    assert openai.prompt_tokens == (len(json.dumps(messages)) + len("[]")) // 4 > 396 // 4
    assert claude.prompt_tokens > openai.prompt_tokens  # the system parameter counts too
    assert not openai.exact and not claude.exact


@pytest.mark.parametrize(
    ("raw", "expected"), [(12, 12), ("12", 12), (None, 0), (-5, 0), ("abc", 0), ([], 0)]
)
def test_token_count(raw, expected):
    assert token_count(raw) == expected
