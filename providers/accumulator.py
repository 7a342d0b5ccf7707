"""Assemble chat-completion chunks into one assistant message, as providers really send them.

Handles OpenAI-style fragments by index, interleaved calls, whole calls in one chunk with
empty ids, calls without an ``index`` (told apart by position and id), every call at
index 0 (Ollama), one index reused for a new id (Moonshot), the id repeated or blanked on
continuation fragments (DashScope), usage in the choice or in a final usage-only chunk.
The openai SDK's own stream helper gets several of these wrong, so the adapter feeds the
raw chunks here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from providers.arguments import parse_arguments
from providers.base import TextCallback, ToolCall, new_tool_call_id

# Keys of a tool-call fragment that are the call itself; anything else (Gemini's
# ``extra_content`` thought signature) is provider data to send back with the call.
_CALL_KEYS = {"index", "id", "type", "function"}


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def arguments_complete(self) -> bool:
        """True when the arguments so far are a whole JSON object (the call is done)."""
        try:
            return isinstance(json.loads(self.arguments), dict)
        except ValueError:
            return False


@dataclass(frozen=True)
class Assembled:
    """One complete assistant turn, still in provider terms (finish reason, raw usage)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    reasoning_content: str
    tool_call_extras: dict[str, dict[str, Any]]
    finish_reason: str | None
    usage: Mapping[str, Any] | None
    response_id: str
    model: str


class StreamAccumulator:
    """Feed it chunks (``add_chunk``) or a whole non-streamed message (``add_message``)."""

    def __init__(
        self,
        *,
        on_text: TextCallback | None = None,
        id_factory: Callable[[], str] = new_tool_call_id,
    ) -> None:
        self._on_text = on_text
        self._id_factory = id_factory
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_PartialCall] = []
        self._slots: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.response_id = ""
        self.model = ""
        self.chunks = 0

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def add_chunk(self, chunk: Mapping[str, Any]) -> None:
        self.chunks += 1
        self.response_id = self.response_id or str(chunk.get("id") or "")
        self.model = self.model or str(chunk.get("model") or "")
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or (choice.get("index") or 0) != 0:
                continue  # n=1: only the first choice is ours
            if isinstance(choice.get("usage"), Mapping):  # Moonshot puts usage here
                self.usage = choice["usage"]
            delta = choice.get("delta") or choice.get("message") or {}
            self._add_delta(delta)
            finish = choice.get("finish_reason")
            if finish:
                self.finish_reason = str(finish)

    def add_message(self, message: Mapping[str, Any], finish_reason: str | None) -> None:
        """A non-streamed response: its message is one delta carrying everything."""
        self._add_delta(message)
        self.finish_reason = finish_reason or "stop"

    def _add_delta(self, delta: Mapping[str, Any]) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            if self._on_text is not None:
                self._on_text(content)
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str):
            self._reasoning.append(reasoning)
        touched: list[_PartialCall] = []
        for position, fragment in enumerate(delta.get("tool_calls") or ()):
            if isinstance(fragment, Mapping):
                touched.append(self._add_fragment(fragment, position, touched))

    def _add_fragment(
        self, fragment: Mapping[str, Any], position: int, touched: list[_PartialCall]
    ) -> _PartialCall:
        function = fragment.get("function") or {}
        frag_id = str(fragment.get("id") or "")
        name = str(function.get("name") or "")
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):  # an object instead of a JSON string
            arguments = json.dumps(arguments, ensure_ascii=False)
        arguments = arguments if isinstance(arguments, str) else ""
        # A fragment without an index is placed by its position in the delta.
        index = fragment.get("index")
        slot = index if isinstance(index, int) else position

        call = self._by_id(frag_id) if frag_id else None
        if call is not None and (
            any(call is seen for seen in touched)
            or (isinstance(index, int) and self._slots.get(slot) is not call)
        ):
            call = None  # the same id on another index, or twice in one delta: not a fragment
        if call is None:
            candidate = self._slots.get(slot)
            if candidate is not None and not self._starts_new_call(
                candidate, frag_id, name, touched
            ):
                call = candidate
        if call is None:
            call = _PartialCall()
            self._calls.append(call)
        self._slots[slot] = call

        if frag_id and not call.id:
            call.id = frag_id
        if name and not call.name:
            call.name = name
        call.arguments += arguments
        for key, value in fragment.items():
            if key not in _CALL_KEYS and value is not None:
                call.extra[key] = value
        return call

    def _by_id(self, frag_id: str) -> _PartialCall | None:
        for call in reversed(self._calls):
            if call.id == frag_id:
                return call
        return None

    @staticmethod
    def _starts_new_call(
        current: _PartialCall, frag_id: str, name: str, touched: list[_PartialCall]
    ) -> bool:
        """Whether a fragment aimed at ``current``'s slot is in fact the start of a new call."""
        if any(current is seen for seen in touched):
            return True  # two fragments in one delta are never the same call
        if frag_id and current.id and frag_id != current.id:
            return True  # a new id starts a new call, whatever the index says
        if name and current.name:
            if current.arguments_complete():
                return True  # a whole call sent after another one at the same index
            if not current.arguments.strip() and name != current.name:
                return True  # zero-argument call followed by a different one
        return False

    def result(self) -> Assembled:
        calls: list[ToolCall] = []
        extras: dict[str, dict[str, Any]] = {}
        seen_ids: set[str] = set()
        for partial in self._calls:
            if not partial.name and not partial.arguments.strip():
                continue  # a fragment that carried nothing (only "type")
            call_id = partial.id
            if not call_id or call_id in seen_ids:
                call_id = self._id_factory()
            seen_ids.add(call_id)
            parsed = parse_arguments(partial.arguments)
            calls.append(
                ToolCall(
                    id=call_id,
                    name=partial.name,
                    arguments=parsed.arguments,
                    raw_arguments=partial.arguments,
                    parse_error=parsed.parse_error,
                    repaired=parsed.repaired,
                )
            )
            if partial.extra:
                extras[call_id] = dict(partial.extra)
        return Assembled(
            text="".join(self._text),
            tool_calls=tuple(calls),
            reasoning_content="".join(self._reasoning),
            tool_call_extras=extras,
            finish_reason=self.finish_reason,
            usage=self.usage,
            response_id=self.response_id,
            model=self.model,
        )
