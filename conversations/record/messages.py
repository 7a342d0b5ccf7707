"""How the neutral messages of a conversation are stored as ``Message`` rows and read
back, and how a row is shown to web clients: every conversion between the two, in one
place."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import namedtuple
from collections.abc import Iterable
from functools import cache
from typing import Any

from adstudio.db.sql import column, quote_name
from adstudio.db.storable import without_nul
from conversations.models import Message as MessageRow
from conversations.models import MessageRole, Run
from providers import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
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
    "id",
)


HistoryRow = namedtuple("HistoryRow", HISTORY_FIELDS)


@cache
def history_sql(conversation: str) -> str:
    """A SQL expression (PostgreSQL) for the history of the conversation whose row is
    aliased ``conversation``, for a statement that reads it along with other things (the
    run's claim): ``history_rows``'s rows as one JSON array, NULL when there is none.
    Read it with ``history_rows_from``."""
    table = quote_name(MessageRow._meta.db_table)
    runs = quote_name(Run._meta.db_table)
    values = ", ".join(f"m.{column(MessageRow, name)}" for name in HISTORY_FIELDS)
    return (
        f"(SELECT json_agg(json_build_array({values}) ORDER BY m.seq) FROM {table} m "
        f"WHERE m.conversation_id = {conversation}.id "
        f"AND m.seq > {conversation}.summary_upto_seq "
        f"AND NOT EXISTS (SELECT 1 FROM {runs} r WHERE r.{column(Run, 'replaces')} = m.run_id))"
    )


def history_rows_from(value: str | list | None) -> list[HistoryRow]:
    """``history_sql``'s value as read: the rows ``history_rows`` gives."""
    rows = json.loads(value) if isinstance(value, str) else value or []
    run_id = HISTORY_FIELDS.index("run_id")
    for row in rows:
        row[run_id] = uuid.UUID(row[run_id]) if row[run_id] else None
    return [HistoryRow(*row) for row in rows]


def history_rows(*, conversation_id, after_seq: int) -> list:
    """The conversation's messages after ``after_seq`` in order, as named rows of
    ``HISTORY_FIELDS`` (which a ``Message`` instance also has); without the messages of a
    run whose reply was regenerated (``Run.replaces``)."""
    return list(
        MessageRow.objects.filter(conversation_id=conversation_id, seq__gt=after_seq)
        .exclude(run__in=Run.objects.filter(replaced_by__isnull=False))
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
    if row.role == MessageRole.USER:
        return UserMessage(text=row.text)
    if row.role == MessageRole.ASSISTANT:
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
    if row.role == MessageRole.TOOL:
        return ToolResultMessage(
            tool_call_id=row.tool_call_id, name=row.name, content=row.text, is_error=row.is_error
        )
    return None  # system rows are not replayed: the system prompt is its own field


def row_fields(message: Message) -> dict[str, Any]:
    """The fields of the ``Message`` row that stores ``message`` (all but its place: the
    conversation, run, sequence number and token estimate)."""
    fields: dict[str, Any] = {"text": getattr(message, "text", "")}
    if isinstance(message, AssistantMessage):
        fields.update(
            role=MessageRole.ASSISTANT,
            tool_calls=tool_calls_to_json(message.tool_calls),
            provider_data=message.provider_data,
        )
    elif isinstance(message, ToolResultMessage):
        fields.update(
            role=MessageRole.TOOL,
            text=message.content,
            tool_call_id=message.tool_call_id,
            name=message.name,
            is_error=message.is_error,
        )
    else:
        fields.update(role=MessageRole.USER)
    return fields


def message_parts(message: MessageRow) -> list[dict[str, Any]]:
    """A stored message as AI-SDK style typed parts."""
    if message.role == MessageRole.TOOL:
        try:
            result = json.loads(message.text)
        except ValueError:
            result = message.text
        return [
            {
                "type": "tool-result",
                "toolCallId": message.tool_call_id,
                "toolName": message.name,
                "result": result,
                "isError": message.is_error,
            }
        ]
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        parts.append(
            {
                "type": "tool-call",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "args": call.get("arguments") or {},
            }
        )
    return parts


# --- The AI SDK's shapes (ai 5/6): UIMessage for useChat, ModelMessage for generateText -


def _result_value(row: MessageRow) -> Any:
    try:
        return json.loads(row.text)
    except ValueError:
        return row.text


def assistant_ui_message_id(run_id: Any) -> str:
    """The id of a run's assistant UIMessage: the same in the history and the stream."""
    return f"run-{run_id}"


def draft_call_key(message_seq: int, call_id: str) -> str:
    """How a draft names the call that wrote it (``Draft.tool_call_id``): the assistant
    message's place and the call's id, since some providers reuse call ids."""
    return f"{message_seq}:{call_id}"[:128]


def draft_data_part(draft: dict[str, Any]) -> dict[str, Any]:
    """A draft a tool call wrote, as the custom ``data-draft`` part of a UIMessage."""
    return {
        "type": "data-draft",
        "id": f"draft-{draft['kind']}-{draft['version']}",
        "data": draft,
    }


def model_messages(rows: Iterable[MessageRow]) -> list[dict[str, Any]]:
    """The conversation as ``ModelMessage``s: user messages as text, assistant messages
    with their text and ``tool-call`` parts, consecutive tool results as one ``tool``
    message of ``tool-result`` parts (``json`` or ``error-json`` output)."""
    messages: list[dict[str, Any]] = []
    for row in rows:
        if row.role == MessageRole.USER:
            messages.append({"role": "user", "content": row.text})
        elif row.role == MessageRole.ASSISTANT:
            content: list[dict[str, Any]] = []
            if row.text:
                content.append({"type": "text", "text": row.text})
            content += [
                {
                    "type": "tool-call",
                    "toolCallId": call["id"],
                    "toolName": call["name"],
                    "input": call.get("arguments") or {},
                }
                for call in row.tool_calls
            ]
            messages.append({"role": "assistant", "content": content})
        elif row.role == MessageRole.TOOL:
            result = {
                "type": "tool-result",
                "toolCallId": row.tool_call_id,
                "toolName": row.name,
                "output": {
                    "type": "error-json" if row.is_error else "json",
                    "value": _result_value(row),
                },
            }
            if messages and messages[-1]["role"] == "tool":
                messages[-1]["content"].append(result)
            else:
                messages.append({"role": "tool", "content": [result]})
    return messages
