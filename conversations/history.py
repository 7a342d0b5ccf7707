"""The stored conversation turned into a provider-valid request history.

Two rules every OpenAI-style API enforces: each assistant tool call is answered by a tool
result, and a tool result answers a call of the assistant message before it. Both are
made true here, deterministically (the same rows always give the same messages, so the
provider's prompt cache keeps hitting). The rows themselves are never changed: staff see
what really happened.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence

from adstudio.storable import without_nul
from conversations.models import Message as MessageRow
from conversations.models import Role
from conversations.providers.base import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

INTERRUPTED_RESULT = json.dumps(
    {"error": "interrupted", "suggestion": "The call did not finish; repeat it if still needed."}
)


# What the loop reads of a stored message. A history is loaded as rows of these fields,
# not as model instances: a long conversation loads hundreds of messages every turn, and
# building instances cost twice the query.
HISTORY_FIELDS = (
    "seq",
    "role",
    "text",
    "tool_calls",
    "tool_call_id",
    "name",
    "is_error",
    "provider_data",
    "tokens",
    "run_id",
)


def history_rows(*, conversation_id, after_seq: int) -> list:
    """The conversation's messages after ``after_seq`` in order, as named rows of
    ``HISTORY_FIELDS`` (which a ``Message`` instance also has)."""
    return list(
        MessageRow.objects.filter(conversation_id=conversation_id, seq__gt=after_seq)
        .order_by("seq")
        .values_list(*HISTORY_FIELDS, named=True)
    )


TOOL_CALL_ID_MAX = MessageRow._meta.get_field("tool_call_id").max_length
TOOL_NAME_MAX = MessageRow._meta.get_field("name").max_length


def storable_reply(message: AssistantMessage) -> AssistantMessage:
    """The model's reply as the database can hold it, before any of it is stored.

    NUL characters, which PostgreSQL refuses in text and JSON, become U+FFFD; call ids and
    names are clipped to their columns (``Message.tool_call_id`` and ``Message.name``), so
    a made-up tool name of any length is answered as an unknown tool. Arguments were
    checked when parsed (``parse_arguments``)."""
    calls = tuple(
        dataclasses.replace(
            call,
            id=without_nul(call.id)[:TOOL_CALL_ID_MAX],
            name=without_nul(call.name)[:TOOL_NAME_MAX],
            raw_arguments=without_nul(call.raw_arguments),
            parse_error=without_nul(call.parse_error),
        )
        for call in message.tool_calls
    )
    return dataclasses.replace(
        message,
        text=without_nul(message.text),
        tool_calls=calls,
        provider_data=without_nul(message.provider_data),
    )


def tool_calls_to_json(calls: Iterable[ToolCall]) -> list[dict]:
    """How an assistant message's tool calls are stored in ``Message.tool_calls``."""
    stored = []
    for call in calls:
        entry = {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "raw_arguments": call.raw_arguments,
        }
        if call.parse_error:
            entry["parse_error"] = call.parse_error
        if call.repaired:
            entry["repaired"] = True
        stored.append(entry)
    return stored


def row_to_message(row: MessageRow) -> Message | None:
    if row.role == Role.USER:
        return UserMessage(text=row.text)
    if row.role == Role.ASSISTANT:
        calls = tuple(
            ToolCall(
                id=c["id"],
                name=c["name"],
                arguments=c.get("arguments") or {},
                raw_arguments=c.get("raw_arguments", ""),
                parse_error=c.get("parse_error"),
                repaired=c.get("repaired", False),
            )
            for c in row.tool_calls
        )
        return AssistantMessage(text=row.text, tool_calls=calls, provider_data=row.provider_data)
    if row.role == Role.TOOL:
        return ToolResultMessage(
            tool_call_id=row.tool_call_id, name=row.name, content=row.text, is_error=row.is_error
        )
    return None  # system rows are not replayed: the system prompt is its own field


def make_valid(messages: Sequence[Message]) -> list[Message]:
    """Answer every open tool call and drop every tool result that answers no call."""
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
        if row.role == Role.USER or not turns:
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
