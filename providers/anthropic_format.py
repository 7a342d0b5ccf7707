"""Translation between the neutral model and Anthropic's Messages API, both ways, in one place.
(Over 450 lines: one wire format, both directions, kept together.)

Requests: the system prompt as the ``system`` parameter, tool calls as ``tool_use`` blocks
with ids made valid for Anthropic, a turn's tool results batched into one user message,
cache breakpoints on the stable prefix. Responses: streamed events (or a whole message)
assembled into an ``AssistantMessage`` with its stop reason and usage.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from providers.arguments import dump_arguments, parse_arguments
from providers.base import (
    AssistantMessage,
    GenerateOptions,
    GenerateRequest,
    Message,
    StopReason,
    TextCallback,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    new_tool_call_id,
    token_count,
)
from providers.profiles import ProviderProfile
from providers.schemas import inline_defs

# Anthropic refuses a tool_use id outside this pattern (400 "messages.N.content.M.tool_use.id:
# String should match pattern '^[a-zA-Z0-9_-]+$'"): Kimi's "functions.name:0" is refused.
TOOL_ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
_INVALID_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]+")
_ID_STEM_LENGTH = 40
_ID_DIGEST_LENGTH = 12
CACHE_MARKER: dict[str, str] = {"type": "ephemeral"}
# Said in place of a tool result the history lacks: Anthropic answers 400 to a tool_use
# without a tool_result in the next user message.
MISSING_RESULT = json.dumps(
    {"error": "interrupted", "suggestion": "The call did not finish; repeat it if still needed."}
)
# The first message must be the user's: said before a history that starts with the model.
CONTINUED = "(The conversation continues.)"
TRUNCATED_CALL = (
    "the reply was cut off at the output token limit inside this call's arguments; "
    "the call is incomplete and was not run"
)
_MAX_TOKENS_STOPS = {"max_tokens", "model_context_window_exceeded"}


# --- Tool-call ids ---------------------------------------------------------------------


def wire_tool_id(tool_call_id: str, occurrence: int = 0) -> str:
    """The id a tool call carries on Anthropic's wire; the neutral history keeps the original.

    Valid ids (Anthropic's own ``toolu_...``, OpenAI's ``call_...``) go out unchanged on
    their first occurrence, so Anthropic's ids round-trip byte for byte. Others, and a later
    occurrence of an id already used in the request (Kimi numbers its calls per round, and
    Anthropic wants every tool_use id unique in a request), become the id with invalid
    characters replaced plus a hash of the original and the occurrence: deterministic, so
    the same history is the same bytes and the prompt cache keeps hitting.
    """
    if occurrence == 0 and TOOL_ID_PATTERN.fullmatch(tool_call_id):
        return tool_call_id
    key = tool_call_id if occurrence == 0 else f"{tool_call_id}#{occurrence}"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:_ID_DIGEST_LENGTH]
    stem = _INVALID_ID_CHARS.sub("_", tool_call_id).strip("_")[:_ID_STEM_LENGTH]
    return f"{stem}_{digest}" if stem else f"toolu_{digest}"


class _WireIds:
    """The wire ids of one request: unique across it, results matched to their call."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._open: dict[str, str] = {}  # original id -> wire id, calls of the last message

    def start_message(self) -> None:
        self._open = {}

    def for_call(self, tool_call_id: str) -> str:
        occurrence = 0
        while (wire := wire_tool_id(tool_call_id, occurrence)) in self._used:
            occurrence += 1
        self._used.add(wire)
        self._open.setdefault(tool_call_id, wire)
        return wire

    def for_result(self, tool_call_id: str) -> str | None:
        """The wire id of the open call this result answers; None for an orphan."""
        return self._open.get(tool_call_id)

    @property
    def open_ids(self) -> list[str]:
        return list(self._open.values())


# --- Requests --------------------------------------------------------------------------


def build_params(
    request: GenerateRequest, profile: ProviderProfile, *, stream: bool
) -> dict[str, Any]:
    """Keyword arguments for ``messages.create`` (plain JSON data, no SDK types)."""
    options = request.options
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": options.max_tokens or profile.default_max_tokens or 4096,
        "messages": build_messages(request.messages, cache=profile.explicit_cache),
    }
    if request.system:
        system: dict[str, Any] = {"type": "text", "text": request.system}
        if profile.explicit_cache:
            system["cache_control"] = dict(CACHE_MARKER)
        params["system"] = [system]
    if request.tools:
        params["tools"] = wire_tools(request.tools, profile)
        choice = tool_choice(options)
        if choice is not None:
            params["tool_choice"] = choice
    if options.temperature is not None:
        params["temperature"] = profile.clamp_temperature(options.temperature)
    if stream:
        params["stream"] = True
    return params


def wire_tools(tools: Sequence[ToolSpec], profile: ProviderProfile) -> list[dict[str, Any]]:
    """Tools sorted by name, schemas deep-copied; the last carries a cache breakpoint."""
    wired = []
    for spec in sorted(tools, key=lambda t: t.name):
        schema = copy.deepcopy(spec.parameters) or {"type": "object", "properties": {}}
        if profile.inline_schema_defs:
            schema = inline_defs(schema)
        wired.append({"name": spec.name, "description": spec.description, "input_schema": schema})
    if wired and profile.explicit_cache:
        wired[-1]["cache_control"] = dict(CACHE_MARKER)
    return wired


def tool_choice(options: GenerateOptions) -> dict[str, Any] | None:
    """``required`` is Anthropic's ``any``; parallel calls are a flag on the choice."""
    if options.tool_choice is None and options.parallel_tool_calls is not False:
        return None
    kind = {"auto": "auto", "none": "none", "required": "any"}[options.tool_choice or "auto"]
    choice: dict[str, Any] = {"type": kind}
    if options.parallel_tool_calls is False and kind != "none":
        choice["disable_parallel_tool_use"] = True
    return choice


def build_messages(messages: Sequence[Message], *, cache: bool = False) -> list[dict[str, Any]]:
    """The neutral history as alternating user/assistant messages of content blocks.

    Consecutive user-side messages (tool results, then the user's next words) become one
    user message with the tool results first, as Anthropic requires; every tool_use is
    answered in the next user message (a missing result is said to be interrupted, a result
    that answers no call of the previous message is left out). With ``cache``, the newest
    block carries a breakpoint, so each round reads the previous rounds from the cache.
    """
    ids = _WireIds()
    wire: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})

    answered: set[str] = set()

    def close_open_calls() -> None:
        """Answer the calls of the last assistant message that got no result."""
        missing = [
            {
                "type": "tool_result",
                "tool_use_id": wire_id,
                "content": MISSING_RESULT,
                "is_error": True,
            }
            for wire_id in ids.open_ids
            if wire_id not in answered
        ]
        add("user", missing)
        ids.start_message()
        answered.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            wire_id = ids.for_result(message.tool_call_id)
            if wire_id is None or wire_id in answered:
                continue  # an orphan: Anthropic refuses a result that answers no call
            answered.add(wire_id)
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": wire_id,
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
            add("user", [block])
        elif isinstance(message, UserMessage):
            close_open_calls()
            add("user", _text_blocks(message.text))
        elif isinstance(message, AssistantMessage):
            close_open_calls()
            add("assistant", _assistant_blocks(message, ids))
    close_open_calls()
    if wire and wire[0]["role"] != "user":
        wire.insert(0, {"role": "user", "content": _text_blocks(CONTINUED)})
    if cache and wire:
        wire[-1]["content"][-1] = {**wire[-1]["content"][-1], "cache_control": dict(CACHE_MARKER)}
    return wire


def _text_blocks(text: str) -> list[dict[str, Any]]:
    # Anthropic refuses text blocks that are empty or only whitespace.
    return [{"type": "text", "text": text}] if text.strip() else []


def _assistant_blocks(message: AssistantMessage, ids: _WireIds) -> list[dict[str, Any]]:
    blocks = _text_blocks(message.text)
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": ids.for_call(call.id),
                "name": call.name,
                # Keys sorted: the same arguments are the same bytes on every request.
                "input": json.loads(dump_arguments(call.arguments)),
            }
        )
    return blocks


# --- Responses -------------------------------------------------------------------------


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    partial_json: list[str] = field(default_factory=list)
    start_input: Any = None


@dataclass(frozen=True)
class AssembledMessage:
    """One complete assistant turn, still in Anthropic's terms (stop reason, raw usage)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str | None
    usage: Mapping[str, Any] | None
    message_id: str


class MessageAssembler:
    """Feed it stream events (``add_event``) or a whole non-streamed message (``add_message``).

    Blocks are kept by their ``index``; ``input_json_delta`` fragments are joined per block
    and parsed once the message is complete. Usage from ``message_start`` is updated by the
    cumulative counts of ``message_delta``, never added to them.
    """

    def __init__(
        self,
        *,
        on_text: TextCallback | None = None,
        id_factory: Callable[[], str] = new_tool_call_id,
    ) -> None:
        self._on_text = on_text
        self._id_factory = id_factory
        self._blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.message_id = ""
        self.events = 0

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    def add_event(self, event: Mapping[str, Any]) -> None:
        self.events += 1
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.message_id = str(message.get("id") or "")
            self._update_usage(message.get("usage"))
        elif kind == "content_block_start":
            self._start_block(_index(event), event.get("content_block") or {})
        elif kind == "content_block_delta":
            self._add_delta(_index(event), event.get("delta") or {})
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self._update_usage(event.get("usage"))
        # content_block_stop, message_stop and ping carry nothing to keep.

    def add_message(self, message: Mapping[str, Any]) -> None:
        """A non-streamed response: its content blocks arrive whole."""
        self.message_id = str(message.get("id") or "")
        for index, block in enumerate(message.get("content") or ()):
            if isinstance(block, Mapping):
                self._start_block(index, block)
        self.stop_reason = str(message.get("stop_reason") or "end_turn")
        self._update_usage(message.get("usage"))

    def _start_block(self, index: int, block: Mapping[str, Any]) -> None:
        kind = str(block.get("type") or "")
        current = _Block(type=kind)
        self._blocks[index] = current
        if kind == "text":
            self._add_text(current, block.get("text"))
        elif kind == "tool_use":
            current.id = str(block.get("id") or "")
            current.name = str(block.get("name") or "")
            current.start_input = block.get("input")
        # thinking and server-tool blocks are not requested, and not kept.

    def _add_delta(self, index: int, delta: Mapping[str, Any]) -> None:
        kind = delta.get("type")
        block = self._blocks.get(index)
        if block is None:  # a delta before its block start: the delta says what it is
            block = _Block(type="tool_use" if kind == "input_json_delta" else "text")
            self._blocks[index] = block
        if kind == "text_delta" and block.type == "text":
            self._add_text(block, delta.get("text"))
        elif kind == "input_json_delta" and block.type == "tool_use":
            partial = delta.get("partial_json")
            if isinstance(partial, str):
                block.partial_json.append(partial)

    def _add_text(self, block: _Block, text: Any) -> None:
        if isinstance(text, str) and text:
            block.text.append(text)
            if self._on_text is not None:
                self._on_text(text)

    def _update_usage(self, raw: Any) -> None:
        if not isinstance(raw, Mapping):
            return
        usage = dict(self.usage or {})
        usage.update({key: value for key, value in raw.items() if value is not None})
        self.usage = usage

    def result(self) -> AssembledMessage:
        ordered = [self._blocks[i] for i in sorted(self._blocks)]
        truncated = self.stop_reason in _MAX_TOKENS_STOPS
        calls: list[ToolCall] = []
        seen: set[str] = set()
        for block in ordered:
            if block.type != "tool_use":
                continue
            call_id = block.id
            if not call_id or call_id in seen:
                call_id = self._id_factory()
            seen.add(call_id)
            calls.append(_tool_call(block, call_id, truncated=truncated))
        return AssembledMessage(
            text="".join("".join(b.text) for b in ordered if b.type == "text"),
            tool_calls=tuple(calls),
            stop_reason=self.stop_reason,
            usage=self.usage,
            message_id=self.message_id,
        )


def _index(event: Mapping[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) else 0


def _tool_call(block: _Block, call_id: str, *, truncated: bool) -> ToolCall:
    raw = "".join(block.partial_json)
    if not raw.strip() and isinstance(block.start_input, Mapping) and block.start_input:
        raw = json.dumps(block.start_input, ensure_ascii=False)  # a whole (non-streamed) call
    if truncated and raw.strip() and not _is_json_object(raw):
        # Repairing a call cut off at the token limit would invent its missing half.
        return ToolCall(
            id=call_id, name=block.name, arguments={}, raw_arguments=raw, parse_error=TRUNCATED_CALL
        )
    parsed = parse_arguments(raw)
    return ToolCall(
        id=call_id,
        name=block.name,
        arguments=parsed.arguments,
        raw_arguments=raw,
        parse_error=parsed.parse_error,
        repaired=parsed.repaired,
    )


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def assistant_message(assembled: AssembledMessage) -> AssistantMessage:
    return AssistantMessage(text=assembled.text, tool_calls=assembled.tool_calls)


def stop_reason(raw: str | None, *, has_tool_calls: bool) -> StopReason:
    """Anthropic's stop reason in neutral terms; ``pause_turn`` (server tools) ends the turn."""
    if raw in _MAX_TOKENS_STOPS:
        return StopReason.MAX_TOKENS
    if raw == "refusal":
        return StopReason.CONTENT_FILTER
    return StopReason.TOOL_CALLS if has_tool_calls else StopReason.END_TURN


def usage_from(raw: Mapping[str, Any] | None) -> Usage | None:
    """Anthropic's usage in neutral terms.

    Anthropic's ``input_tokens`` excludes cached tokens: all input is ``input_tokens +
    cache_read_input_tokens + cache_creation_input_tokens`` (the SDK's ``Usage`` docstring),
    which is what ``Usage.prompt_tokens`` means.
    """
    if not isinstance(raw, Mapping) or raw.get("input_tokens") is None:
        return None
    fresh = token_count(raw.get("input_tokens"))
    read = token_count(raw.get("cache_read_input_tokens"))
    written = token_count(raw.get("cache_creation_input_tokens"))
    return Usage(
        prompt_tokens=fresh + read + written,
        completion_tokens=token_count(raw.get("output_tokens")),
        cached_prompt_tokens=read,
        cache_creation_tokens=written,
    )


def estimated_usage(params: Mapping[str, Any], message: AssistantMessage) -> Usage:
    """A rough count for a reply that reported no usage."""
    prompt_chars = sum(
        len(json.dumps(params.get(key) or [], ensure_ascii=False))
        for key in ("system", "messages", "tools")
    )
    return Usage.estimate(prompt_chars=prompt_chars, message=message)
