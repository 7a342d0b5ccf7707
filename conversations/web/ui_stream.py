"""A run's stored events as the AI SDK's UI message stream (protocol v1, ``ai`` 5 and 6),
what a ``useChat`` client reads: one assistant message per run, a step per model call,
text, tool calls with their input and output, and each draft written as a ``data-draft``
part. Because the stream is made from stored events, it can be read again from the
start, or from any event on, at any time: a dropped connection loses nothing.
"""

from __future__ import annotations

import json
from typing import Any

from conversations.models import Run, RunEvent, RunEventType, RunStatus, StopCause
from conversations.record.messages import assistant_ui_message_id, draft_data_part

# The response headers the AI SDK's transport expects (ai's UI_MESSAGE_STREAM_HEADERS).
HEADERS = {
    "Cache-Control": "no-cache",
    "X-Vercel-AI-UI-Message-Stream": "v1",
    "X-Accel-Buffering": "no",
}
_FINISH_REASONS = {
    StopCause.FINAL_ANSWER: "stop",
    StopCause.MAX_ROUNDS: "length",
    StopCause.TOKEN_BUDGET: "length",
}

# The run's fields the message's end reads (``UIMessageStream.finish``).
FINISH_FIELDS = ("error_message", "prompt_tokens", "completion_tokens")
# A text part whose reply failed part-way and was asked again: not part of the answer.
ABANDONED = {"adstudio": {"abandoned": True}}

Chunk = dict[str, Any]


class UIMessageStream:
    """Turns a run's events, in order, into UI message stream chunks."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.text_id: str | None = None  # the text part being streamed
        self.in_step = False

    def start(self) -> list[Chunk]:
        """The message's start and, for a run whose message carries the brief, the brief
        as a ``data-brief`` part: what the director was given."""
        chunks: list[Chunk] = [
            {
                "type": "start",
                "messageId": assistant_ui_message_id(self.run.pk),
                "messageMetadata": {"runId": str(self.run.pk)},
            }
        ]
        if self.run.brief:
            chunks.append({"type": "data-brief", "id": "brief", "data": self.run.brief})
        return chunks

    def chunks(self, event: RunEvent) -> list[Chunk]:
        data = event.data
        match event.type:
            case RunEventType.MODEL_CALL_STARTED:
                chunks = self._end_step()
                self.in_step = True
                return [*chunks, {"type": "start-step"}]
            case RunEventType.TEXT if "delta" in data:
                opened = self._open_text(event)
                return [*opened, {"type": "text-delta", "id": self.text_id, "delta": data["delta"]}]
            case RunEventType.TEXT if "text" in data:
                return [
                    *self._open_text(event),
                    {"type": "text-delta", "id": self.text_id, "delta": data["text"]},
                    *self._close_text(),
                ]
            case RunEventType.TEXT:  # reset: the failed attempt's text part ends there
                return self._close_text(abandoned=True)
            case RunEventType.TOOL_CALL_STARTED:
                return [
                    *self._close_text(),
                    {
                        "type": "tool-input-available",
                        "toolCallId": data["toolCallId"],
                        "toolName": data["name"],
                        "input": data["arguments"],
                    },
                ]
            case RunEventType.TOOL_CALL_FINISHED if data["isError"]:
                result = data["result"]
                error = " ".join(str(result[k]) for k in ("error", "suggestion") if result.get(k))
                return [
                    {
                        "type": "tool-output-error",
                        "toolCallId": data["toolCallId"],
                        "errorText": error,
                    }
                ]
            case RunEventType.TOOL_CALL_FINISHED:
                return [
                    {
                        "type": "tool-output-available",
                        "toolCallId": data["toolCallId"],
                        "output": data["result"],
                    }
                ]
            case RunEventType.DRAFT_CREATED:
                draft = {
                    "kind": data["kind"],
                    "version": data["version"],
                    "id": data.get("draftId"),
                    "toolCallId": data["toolCallId"],
                }
                return [draft_data_part(draft)]
            case RunEventType.RUN_FINISHED:
                return self.finish(data)
        return []

    def finish(self, data: dict[str, Any]) -> list[Chunk]:
        """The end of the message, from the ``run.finished`` event: in the message's
        metadata, its status, its error and what it used (``FINISH_FIELDS`` of the run,
        read when the event is); for a failed run, that metadata and an ``error`` chunk
        before the ``finish``."""
        chunks = [*self._close_text(), *self._end_step()]
        status, cause = data.get("status"), data.get("stopCause")
        run = self.run
        metadata: dict[str, Any] = {
            "runId": str(run.pk),
            "status": status,
            "usage": {
                "inputTokens": run.prompt_tokens,
                "outputTokens": run.completion_tokens,
                "totalTokens": run.prompt_tokens + run.completion_tokens,
            },
        }
        if status == RunStatus.FAILED:
            metadata["error"] = run.error_message or data.get("errorCode") or "The run failed."
            # useChat stops reading at an error: the metadata goes first.
            chunks.append({"type": "message-metadata", "messageMetadata": metadata})
            chunks.append({"type": "error", "errorText": metadata["error"]})
        chunks.append(
            {
                "type": "finish",
                "finishReason": "error"
                if status == RunStatus.FAILED
                else _FINISH_REASONS.get(cause, "other"),
                "messageMetadata": metadata,
            }
        )
        return chunks

    def _end_step(self) -> list[Chunk]:
        if not self.in_step:
            return []
        self.in_step = False
        return [*self._close_text(), {"type": "finish-step"}]

    def _open_text(self, event: RunEvent) -> list[Chunk]:
        if self.text_id is not None:
            return []
        self.text_id = f"text-{event.seq}"
        return [{"type": "text-start", "id": self.text_id}]

    def _close_text(self, *, abandoned: bool = False) -> list[Chunk]:
        """The text part's end; ``abandoned``: the text of a provider's reply that failed
        part-way and was asked again, marked so in the part's ``providerMetadata``."""
        if self.text_id is None:
            return []
        chunk: Chunk = {"type": "text-end", "id": self.text_id}
        if abandoned:
            chunk["providerMetadata"] = ABANDONED
        self.text_id = None
        return [chunk]


def sse(chunk: Chunk, *, chunk_id: int) -> str:
    """The chunk as a server-sent event whose id is its place in the run's stream (1 for
    ``start``): a reader that keeps its place resumes after it (``Last-Event-ID``)."""
    return f"id: {chunk_id}\ndata: {json.dumps(chunk, default=str)}\n\n"


DONE = "data: [DONE]\n\n"
