"""The provider layer: the neutral model, the adapters, routing, retries and failover.

The rest of the project imports from here only: ``route``, ``generate``, ``get_provider``,
the message types and the error hierarchy. No module outside this package imports an
SDK.
"""

from __future__ import annotations

from providers.base import (
    AssistantMessage,
    AuthenticationFailed,
    BadRequest,
    ChatProvider,
    ChatRole,
    ContentFiltered,
    GenerateOptions,
    GenerateRequest,
    Message,
    ModelResponse,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    StopReason,
    TextCallback,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    TransientError,
    Usage,
    UserMessage,
    new_tool_call_id,
)
from providers.resilience import Attempt, ProviderBinding, generate
from providers.retry import RetryPolicy
from providers.router import (
    PROVIDER_NAMES,
    ProviderUnavailable,
    get_provider,
    is_configured,
    model_for,
    route,
)

__all__ = [
    "PROVIDER_NAMES",
    "AssistantMessage",
    "Attempt",
    "AuthenticationFailed",
    "BadRequest",
    "ChatProvider",
    "ChatRole",
    "ContentFiltered",
    "GenerateOptions",
    "GenerateRequest",
    "Message",
    "ModelResponse",
    "ProviderBinding",
    "ProviderError",
    "ProviderUnavailable",
    "QuotaExhausted",
    "RateLimited",
    "RetryPolicy",
    "StopReason",
    "TextCallback",
    "ToolCall",
    "ToolResultMessage",
    "ToolSpec",
    "TransientError",
    "Usage",
    "UserMessage",
    "generate",
    "get_provider",
    "is_configured",
    "model_for",
    "new_tool_call_id",
    "route",
]
