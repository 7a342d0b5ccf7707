"""The stored conversation turned into a provider-valid request history, and cut into
turns when it must be summarised.

Two rules every OpenAI-style API enforces: each assistant tool call is answered by a tool
result, and a tool result answers a call of the assistant message before it. Both are
made true here, deterministically (the same rows always give the same messages, so the
provider's prompt cache keeps hitting). The rows themselves are never changed: staff see
what really happened.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from conversations.models import Message as MessageRow
from conversations.models import MessageRole
from providers import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
)

INTERRUPTED_RESULT = json.dumps(
    {"error": "interrupted", "suggestion": "The call did not finish; repeat it if still needed."}
)


def pair_calls_and_results(messages: Sequence[Message]) -> list[Message]:
    """The messages with every open tool call answered (as interrupted) and every tool
    result that answers no call dropped."""
    valid: list[Message] = []
    open_calls: dict[str, ToolCall] = {}

    def close_open_calls() -> None:
        for call in open_calls.values():
            valid.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    name=call.name,
                    content=INTERRUPTED_RESULT,
                    is_error=True,
                )
            )
        open_calls.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            if open_calls.pop(message.tool_call_id, None) is not None:
                valid.append(message)
            continue  # an orphan: its call is missing (or already answered)
        close_open_calls()
        valid.append(message)
        if isinstance(message, AssistantMessage):
            open_calls = {call.id: call for call in message.tool_calls}
    close_open_calls()
    return valid


def split_turns(rows: Sequence[MessageRow]) -> list[list[MessageRow]]:
    """Group stored messages into turns, each starting at a user message; tool results
    always stay in the turn of the assistant message that called them."""
    turns: list[list[MessageRow]] = []
    for row in rows:
        if row.role == MessageRole.USER or not turns:
            turns.append([])
        turns[-1].append(row)
    return turns


def recent_turns_within(
    turns: Sequence[list[MessageRow]], *, budget: int
) -> tuple[list[list[MessageRow]], list[list[MessageRow]]]:
    """Split ``turns`` into (older, recent): the most recent whole turns whose estimated
    tokens fit ``budget``. The last turn is always kept, whatever its size."""
    kept = 0
    total = 0
    for turn in reversed(turns):
        size = sum(row.tokens for row in turn)
        if kept and total + size > budget:
            break
        total += size
        kept += 1
    split = len(turns) - kept
    return list(turns[:split]), list(turns[split:])
