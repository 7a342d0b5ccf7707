"""Translation between the neutral model and the chat-completions wire format, in one place.

Requests are built so the prefix (system prompt, tool schemas, earlier turns) serialises to
the same bytes on every turn of a conversation; provider quirks come from the profile.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from providers.accumulator import Assembled
from providers.arguments import dump_arguments
from providers.base import (
    AssistantMessage,
    GenerateRequest,
    StopReason,
    ToolResultMessage,
    Usage,
    UserMessage,
    token_count,
)
from providers.profiles import ProviderProfile
from providers.schemas import wire_tools

logger = logging.getLogger(__name__)

# Keys of AssistantMessage.provider_data.
PROVIDER = "provider"  # which adapter wrote the message (tool-call extras go back only there)
REASONING_CONTENT = "reasoning_content"
TOOL_CALL_EXTRAS = "tool_call_extras"  # {call id: {"extra_content": ...}}

_CACHE_MARKER = {"type": "ephemeral"}


def build_payload(
    request: GenerateRequest, profile: ProviderProfile, *, provider: str, stream: bool
) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create`` (no SDK types: plain JSON data)."""
    traits = profile.traits(request.model)
    payload: dict[str, Any] = {
        "model": request.model,
        "messages": build_messages(request, profile, provider=provider),
    }
    options = request.options
    if request.tools:
        payload["tools"] = wire_tools(
            request.tools, inline=profile.inline_schema_defs, strict=profile.strict_tools
        )
        if options.tool_choice is not None:
            choice = options.tool_choice
            if choice not in profile.tool_choices:
                logger.info("%s does not accept tool_choice=%r; sending 'auto'", provider, choice)
                choice = "auto"
            payload["tool_choice"] = choice
        if options.parallel_tool_calls is not None:
            payload["parallel_tool_calls"] = options.parallel_tool_calls
    if options.temperature is not None and traits.temperature:
        payload["temperature"] = profile.clamp_temperature(options.temperature)
    if options.max_tokens is not None:
        payload[profile.max_tokens_param] = options.max_tokens
    if stream:
        payload["stream"] = True
        if profile.stream_usage:
            payload["stream_options"] = {"include_usage": True}
    return payload


def build_messages(
    request: GenerateRequest, profile: ProviderProfile, *, provider: str
) -> list[dict[str, Any]]:
    traits = profile.traits(request.model)
    messages: list[dict[str, Any]] = []
    if request.system:
        if traits.explicit_cache and traits.list_content:
            # The stable prefix carries the explicit cache marker (DashScope: on the part).
            content: Any = [
                {"type": "text", "text": request.system, "cache_control": _CACHE_MARKER}
            ]
        else:
            content = request.system
        messages.append({"role": "system", "content": content})
    for message in request.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            messages.append(_assistant(message, profile, provider=provider))
        elif isinstance(message, ToolResultMessage):
            wire = {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": message.content,
            }
            if profile.tool_message_name:
                wire["name"] = message.name
            messages.append(wire)
    return messages


def _assistant(
    message: AssistantMessage, profile: ProviderProfile, *, provider: str
) -> dict[str, Any]:
    data = message.provider_data or {}
    wire: dict[str, Any] = {"role": "assistant"}
    if message.tool_calls:
        wire["content"] = message.text or profile.empty_assistant_content
        same_provider = data.get(PROVIDER) == provider
        extras = data.get(TOOL_CALL_EXTRAS) or {}
        calls = []
        for call in message.tool_calls:
            wire_call: dict[str, Any] = {
                "id": call.id,  # byte for byte: Kimi's "functions.name:0" ids included
                "type": "function",
                "function": {"name": call.name, "arguments": dump_arguments(call.arguments)},
            }
            if same_provider and isinstance(extras.get(call.id), Mapping):
                wire_call.update(extras[call.id])
            calls.append(wire_call)
        wire["tool_calls"] = calls
    else:
        wire["content"] = message.text
    reasoning = data.get(REASONING_CONTENT)
    if profile.echo_reasoning_content and isinstance(reasoning, str) and reasoning:
        wire["reasoning_content"] = reasoning
    return wire


def stop_reason(finish_reason: str | None, *, has_tool_calls: bool) -> StopReason:
    """Map a finish reason; tool calls win over "stop" (several servers say stop anyway)."""
    if finish_reason == "length":
        return StopReason.MAX_TOKENS
    if finish_reason == "content_filter":
        return StopReason.CONTENT_FILTER
    # "tool_calls" without any call (an empty list) is an answer with nothing to run.
    return StopReason.TOOL_CALLS if has_tool_calls else StopReason.END_TURN


def assistant_message(assembled: Assembled, *, provider: str) -> AssistantMessage:
    data: dict[str, Any] = {}
    if assembled.reasoning_content:
        data[REASONING_CONTENT] = assembled.reasoning_content
    if assembled.tool_call_extras:
        data[TOOL_CALL_EXTRAS] = assembled.tool_call_extras
    if data:
        data[PROVIDER] = provider
    return AssistantMessage(
        text=assembled.text, tool_calls=assembled.tool_calls, provider_data=data
    )


def usage_from(raw: Mapping[str, Any] | None) -> Usage | None:
    """Usage as each provider reports it (OpenAI, DashScope, Moonshot, DeepSeek shapes)."""
    if not isinstance(raw, Mapping):
        return None
    details = raw.get("prompt_tokens_details") or {}
    if not isinstance(details, Mapping):
        details = {}
    cached = (
        details.get("cached_tokens")
        or raw.get("cached_tokens")  # Moonshot
        or raw.get("prompt_cache_hit_tokens")  # DeepSeek
        or 0
    )
    return Usage(
        prompt_tokens=token_count(raw.get("prompt_tokens") or raw.get("input_tokens")),
        completion_tokens=token_count(raw.get("completion_tokens") or raw.get("output_tokens")),
        cached_prompt_tokens=token_count(cached),
        cache_creation_tokens=token_count(details.get("cache_creation_input_tokens")),
    )


def estimated_usage(payload: Mapping[str, Any], message: AssistantMessage) -> Usage:
    """A rough count for providers that report no usage."""
    prompt_chars = len(json.dumps(payload.get("messages", []), ensure_ascii=False))
    prompt_chars += len(json.dumps(payload.get("tools", []), ensure_ascii=False))
    return Usage.estimate(prompt_chars=prompt_chars, message=message)
