"""A conversation as the AI SDK's ``UIMessage``s, exactly as a ``useChat`` client that
watched each run live holds them (``?format=ui``).

Each run is its user message, with the id the client gave it, and its reply: the run's
stored events made into the UI message stream (``conversations.web.ui_stream``), which is
what the client was sent, put together as the ``ai`` package puts a stream together
(its ``processUIMessageStream``). So the history and the live page cannot differ: the
brief is the reply's ``data-brief`` part, a failed run's error is in its metadata, the
text of a reply that failed part-way is a part marked ``abandoned``, and a regenerated
reply is left out, as ``useChat``'s ``regenerate`` removes it.

It tells the turns the model history (``record.messages.model_messages``) tells: a
generation, which no person typed, is its user message all the same, the brief as the
director was given it; a message cancelled while queued never reached the director and
is left out of both, with its empty reply.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from itertools import groupby
from typing import Any

from conversations.agent.prompts import request_text_of
from conversations.models import Conversation, Run, RunEvent, RunStatus
from conversations.web.ui_stream import Chunk, UIMessageStream

UIMessage = dict[str, Any]


def conversation_ui_messages(conversation: Conversation) -> list[UIMessage]:
    """The conversation's runs in order, each as its user message (when the person wrote
    one) and its reply (once the run has events), without the regenerated replies."""
    runs = list(
        Run.objects.filter(conversation=conversation, replaced_by__isnull=True).order_by(
            "created_at"
        )
    )
    events = RunEvent.objects.filter(run__in=[run.pk for run in runs]).order_by("run_id", "seq")
    by_run = {run_id: list(rows) for run_id, rows in groupby(events, key=lambda e: e.run_id)}
    messages: list[UIMessage] = []
    for run in runs:
        if withdrawn(run):
            continue
        user = user_ui_message(run)
        if user is not None:
            messages.append(user)
        run_events = by_run.get(run.pk)
        if run_events:
            messages.append(reply_ui_message(run, run_events))
    return messages


def withdrawn(run: Run) -> bool:
    """Cancelled before a worker claimed it: the director never read the message (the
    claim writes it into the model's history), so neither history tells it."""
    return run.status == RunStatus.CANCELLED and run.started_at is None


def user_ui_message(run: Run) -> UIMessage | None:
    """What the person wrote, as their client showed it (the brief is the reply's
    ``data-brief``); a generation's brief, sent with no text of theirs, as the director
    was given it, as the model history has it."""
    text = request_text_of(run.input_text, run.brief) if run.brief else run.input_text
    if not text:
        text = run.input_text
    if not text:
        return None
    return {
        "id": run.client_message_id or f"user-{run.pk}",
        "role": "user",
        "parts": [{"type": "text", "text": text}],
    }


def reply_ui_message(run: Run, events: Iterable[RunEvent]) -> UIMessage:
    """The run's reply from its events, as its UI message stream builds it."""
    stream = UIMessageStream(run)
    chunks = stream.start()
    for event in events:
        chunks += stream.chunks(event)
    return assembled(chunks)


def assembled(chunks: Iterable[Chunk]) -> UIMessage:
    """The assistant ``UIMessage`` a UI message stream's chunks make, as ``ai``'s
    ``processUIMessageStream`` makes it, for the chunks ``UIMessageStream`` sends (and
    as JSON: fields the SDK leaves undefined are absent)."""
    message: UIMessage = {"id": "", "role": "assistant", "parts": []}
    parts: list[dict[str, Any]] = message["parts"]
    texts: dict[str, dict[str, Any]] = {}  # the text parts open in this step
    step_start = 0  # where the current step's parts begin
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "start":
            message["id"] = chunk.get("messageId") or message["id"]
            _merge_metadata(message, chunk.get("messageMetadata"))
        elif kind in ("finish", "message-metadata"):
            _merge_metadata(message, chunk.get("messageMetadata"))
        elif kind == "start-step":
            parts.append({"type": "step-start"})
            step_start = len(parts)
        elif kind == "finish-step":
            texts = {}
        elif kind == "text-start":
            texts[chunk["id"]] = {"type": "text", "text": "", "state": "streaming"}
            _set_if(texts[chunk["id"]], "providerMetadata", chunk.get("providerMetadata"))
            parts.append(texts[chunk["id"]])
        elif kind == "text-delta":
            texts[chunk["id"]]["text"] += chunk["delta"]
        elif kind == "text-end":
            part = texts.pop(chunk["id"])
            part["state"] = "done"
            _set_if(part, "providerMetadata", chunk.get("providerMetadata"))
        elif kind == "tool-input-available":
            part = _tool_part(parts[step_start:], chunk["toolCallId"])
            if part is None:
                part = {"type": f"tool-{chunk['toolName']}", "toolCallId": chunk["toolCallId"]}
                parts.append(part)
            part.update(state="input-available", input=copy.deepcopy(chunk["input"]))
        elif kind == "tool-output-available":
            part = _tool_part(parts, chunk["toolCallId"])
            part.update(state="output-available", output=copy.deepcopy(chunk["output"]))
            part.pop("errorText", None)
        elif kind == "tool-output-error":
            part = _tool_part(parts, chunk["toolCallId"])
            part.update(state="output-error", errorText=chunk["errorText"])
            part.pop("output", None)
        elif kind.startswith("data-"):
            same = next(
                (
                    p
                    for p in parts
                    if p["type"] == kind and "id" in chunk and p.get("id") == chunk["id"]
                ),
                None,
            )
            if same is not None:
                same["data"] = copy.deepcopy(chunk["data"])
            else:
                parts.append(copy.deepcopy(chunk))
        # "error" changes no message: useChat shows it as the chat's error (and reads
        # no further: the stream sends a failed run's metadata before it).
    return message


def _tool_part(parts: list[dict[str, Any]], call_id: str) -> dict[str, Any] | None:
    return next(
        (p for p in parts if p["type"].startswith("tool-") and p.get("toolCallId") == call_id),
        None,
    )


def _set_if(part: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        part[key] = copy.deepcopy(value)


def _merge_metadata(message: UIMessage, metadata: dict[str, Any] | None) -> None:
    if metadata is not None:
        message["metadata"] = _merged(message.get("metadata"), metadata)


def _merged(base: Any, update: Any) -> Any:
    """``ai``'s ``mergeObjects``: plain objects merged key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(update, dict):
        merged = dict(base)
        for key, value in update.items():
            merged[key] = _merged(base.get(key), value)
        return merged
    return copy.deepcopy(update)
