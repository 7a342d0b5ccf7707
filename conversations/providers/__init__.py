"""The provider layer: the neutral model, the adapters, routing, retries and failover.

The agent loop imports from here only: ``route``, ``generate``, ``get_provider``, the
message types and the error hierarchy.
"""

from __future__ import annotations

from conversations.providers.base import (
    AssistantMessage,
    AuthenticationFailed,
    BadRequest,
    ChatProvider,
    ContentFiltered,
    GenerateOptions,
    GenerateRequest,
    Message,
    ModelResponse,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    Role,
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
from conversations.providers.resilience import Attempt, ProviderBinding, generate
from conversations.providers.retry import RetryPolicy
from conversations.providers.router import (
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
    "Role",
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
