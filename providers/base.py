"""The neutral message model: the only shapes the agent loop and storage ever see.

Every adapter translates between these types and its wire format in one module, so
the loop never learns which provider answered. The system prompt is its own field,
never a message; every tool call carries an id; arguments are kept parsed and raw.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol


class ChatRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class StopReason(StrEnum):
    END_TURN = "end_turn"
    TOOL_CALLS = "tool_calls"
    MAX_TOKENS = "max_tokens"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"


def new_tool_call_id() -> str:
    """An id for a tool call the provider sent without one (or with an empty one)."""
    return f"call_{uuid.uuid4().hex}"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    # Parsed (and, where needed, repaired) arguments: what the tool receives and what is
    # replayed to the provider on later requests.
    arguments: dict[str, Any]
    # The exact string the model sent, kept for staff and for repair statistics.
    raw_arguments: str
    # Why the arguments could not be turned into an object, if they could not: the loop
    # answers such a call with a tool error instead of running the tool.
    parse_error: str | None = None
    repaired: bool = False


@dataclass(frozen=True)
class UserMessage:
    text: str
    role: Literal[ChatRole.USER] = ChatRole.USER


@dataclass(frozen=True)
class AssistantMessage:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # Provider fields that must be sent back with this message on later requests
    # (Kimi ``reasoning_content``, Gemini ``extra_content`` thought signatures).
    provider_data: dict[str, Any] = field(default_factory=dict)
    role: Literal[ChatRole.ASSISTANT] = ChatRole.ASSISTANT


@dataclass(frozen=True)
class ToolResultMessage:
    tool_call_id: str
    name: str
    content: str  # JSON text of the tool's result or of {"error", "suggestion"}
    is_error: bool = False
    role: Literal[ChatRole.TOOL] = ChatRole.TOOL


Message = UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


ToolChoice = Literal["auto", "none", "required"]


@dataclass(frozen=True)
class GenerateOptions:
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    stream: bool = False


@dataclass(frozen=True)
class GenerateRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    options: GenerateOptions = field(default_factory=GenerateOptions)

    def __post_init__(self) -> None:
        for message in self.messages:
            if not isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
                raise TypeError(
                    f"messages hold user, assistant and tool messages only, not {message!r}; "
                    "the system prompt goes in GenerateRequest.system"
                )


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0  # all input tokens, cached ones included
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # input tokens served from the provider's cache
    cache_creation_tokens: int = 0  # input tokens written to the cache (Anthropic)
    exact: bool = True  # False when counted locally because the provider reported none

    @classmethod
    def estimate(cls, *, prompt_chars: int, message: AssistantMessage) -> Usage:
        """A rough count (4 characters a token) for a reply that reported no usage."""
        completion_chars = len(message.text) + sum(
            len(call.raw_arguments) + len(call.name) for call in message.tool_calls
        )
        return cls(
            prompt_tokens=max(1, prompt_chars // 4),
            completion_tokens=max(1, completion_chars // 4) if completion_chars else 0,
            exact=False,
        )


def token_count(value: Any) -> int:
    """A provider's token figure as a non-negative int; 0 when it is missing or garbled."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class ModelResponse:
    message: AssistantMessage
    stop_reason: StopReason
    usage: Usage
    provider: str
    model: str
    request_id: str = ""
    latency_ms: int = 0
    response_id: str = ""  # the provider's id of the completion itself (chatcmpl-..., msg_...)


TextCallback = Callable[[str], None]


class ChatProvider(Protocol):
    """What every adapter offers the loop: one request in, one complete response out.

    ``on_text`` receives text deltas as they arrive when the adapter streams. Any failure
    is raised as a ``ProviderError`` subclass; nothing else escapes an adapter.
    """

    name: str

    def generate(
        self, request: GenerateRequest, *, on_text: TextCallback | None = None
    ) -> ModelResponse: ...


# --- Errors ------------------------------------------------------------------------------


class ProviderError(Exception):
    """A provider call failed. ``retryable`` tells the retry policy what to do."""

    retryable = False
    code = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        provider_code: str = "",
        request_id: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        # The provider's own error code ("insufficient_quota", "data_inspection_failed",
        # "context_length_exceeded"...), for ModelCall rows and for the loop's decisions.
        self.provider_code = provider_code
        self.request_id = request_id

    def __str__(self) -> str:
        prefix = f"{self.provider}: " if self.provider else ""
        return f"{prefix}{self.message}"


class RateLimited(ProviderError):
    retryable = True
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class TransientError(ProviderError):
    """5xx, overload, timeout, connection reset, a stream cut short: worth another try."""

    retryable = True
    code = "transient"

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class BadRequest(ProviderError):
    """The provider refused our request as invalid: our fault, never retried."""

    code = "bad_request"


class AuthenticationFailed(ProviderError):
    """Missing or rejected API key; the message names the env var to set."""

    code = "authentication"


class QuotaExhausted(ProviderError):
    """A 429 that no wait will fix (insufficient_quota, a spend limit)."""

    code = "quota_exhausted"


class ContentFiltered(ProviderError):
    """The provider's moderation refused the content."""

    code = "content_filtered"


class Interrupted(ProviderError):
    """The call was ended on purpose (its run was cancelled): not retried, and no other
    provider is asked."""

    code = "cancelled"
