"""Classify a provider's error reply (status, headers, body) into our error hierarchy.

Pure functions, no SDK: the adapter catches the SDK's exceptions and hands their status,
headers and body here. Bodies may be a JSON object, a JSON array (Gemini) or plain text.
Messages are scrubbed of anything that looks like an API key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from providers.retry import retry_after

# A 429 (or 400/403) that no wait will fix: the account is out of money or over a limit.
_QUOTA_CODES = {
    "insufficient_quota",  # OpenAI
    "billing_hard_limit_reached",  # OpenAI
    "exceeded_current_quota_error",  # Moonshot
    "arrearage",  # DashScope: the account is in arrears
    "quota_exceeded",  # ElevenLabs: out of credits (sent with HTTP 401 or 400)
}
_QUOTA_PHRASES = (
    "exceeded your current quota",
    "spend limit",
    "spending limit",
    "billing hard limit",
    "check your plan and billing",
)
# Moderation refusals: final for this content, never retried.
_FILTER_CODES = {
    "data_inspection_failed",  # DashScope
    "datainspectionfailed",  # DashScope native casing
    "content_filter",  # Azure OpenAI
    "content_policy_violation",
    "content_filtered",
}
_FILTER_PHRASES = ("inappropriate content", "content management policy")
# Overload answered with a 4xx status that is really "try again shortly".
_OVERLOAD_CODES = {
    "engine_overloaded_error",  # Moonshot 429
    "overloaded_error",  # Anthropic-style 529
    "server_overloaded",
    "serviceunavailable",
}
_TRANSIENT_STATUSES = {408, 409, 425, 529}
# OpenAI, DashScope and Moonshot keys all start with "sk-".
_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}")


@dataclass(frozen=True)
class ErrorDetail:
    code: str
    message: str


def error_detail(body: Any) -> ErrorDetail:
    """The provider's error code and message from any body shape it may send."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return ErrorDetail(code="", message=body.strip())
    if isinstance(body, list):  # Gemini: [{"error": {...}}]
        body = next((item for item in body if isinstance(item, Mapping)), {})
    if not isinstance(body, Mapping):
        return ErrorDetail(code="", message="" if body is None else str(body))
    error = body.get("error", body)
    if isinstance(error, str):
        return ErrorDetail(code=str(body.get("code") or ""), message=error)
    if not isinstance(error, Mapping):
        error = body
    if error is body and "detail" in body and not body.get("message"):
        # FastAPI-style (ElevenLabs): {"detail": {"code"/"status", "message"}}, a list of
        # validation errors, or a string.
        detail = body["detail"]
        if isinstance(detail, list):
            return _validation_detail(detail)
        if isinstance(detail, str):
            return ErrorDetail(code=str(body.get("code") or ""), message=detail)
        if isinstance(detail, Mapping):
            error = detail
    code = error.get("code") or error.get("type") or error.get("status") or body.get("code")
    message = error.get("message") or body.get("message") or ""
    return ErrorDetail(code=str(code or ""), message=str(message))


def _validation_detail(items: list[Any]) -> ErrorDetail:
    """A validation error list (``[{"loc": [...], "msg": ..., "type": ...}]``) as one
    message naming each field, its code the first item's type."""
    found = [item for item in items if isinstance(item, Mapping)]
    parts = []
    for item in found:
        where = ".".join(str(part) for part in item.get("loc") or ())
        text = str(item.get("msg") or "")
        parts.append(f"{where}: {text}" if where else text)
    code = found[0].get("type") if found else ""
    return ErrorDetail(code=str(code or ""), message="; ".join(p for p in parts if p))


def _codes(body: Any, detail: ErrorDetail) -> set[str]:
    """Every code-like value in the body (code, type, status), lower-cased."""
    found = {detail.code.lower()} if detail.code else set()
    if isinstance(body, list):
        body = next((item for item in body if isinstance(item, Mapping)), {})
    if isinstance(body, Mapping):
        for scope in (body, body.get("error"), body.get("detail")):
            if isinstance(scope, Mapping):
                for key in ("code", "type", "status"):
                    if isinstance(scope.get(key), str):
                        found.add(scope[key].lower())
    return found


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove API keys (ours, and anything shaped like one) from a message."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("sk-***", text)


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def classify_status(
    *,
    status: int,
    body: Any,
    headers: Mapping[str, str],
    provider: str,
    key_env: str,
    secrets: Iterable[str] = (),
    request_id: str = "",
) -> ProviderError:
    """The error for an HTTP error reply."""
    detail = error_detail(body)
    codes = _codes(body, detail)
    text = _clip(scrub(detail.message, secrets)) or f"HTTP {status}"
    lowered = text.lower()
    common = {
        "provider": provider,
        "status": status,
        "provider_code": detail.code,
        "request_id": request_id,
    }
    if codes & _FILTER_CODES or any(p in lowered for p in _FILTER_PHRASES):
        return ContentFiltered(f"the provider's moderation refused the content: {text}", **common)
    if codes & _QUOTA_CODES or any(p in lowered for p in _QUOTA_PHRASES):
        return QuotaExhausted(
            f"quota or spend limit exhausted ({text}); add credit for the key in {key_env} "
            "or route to another provider",
            **common,
        )
    if status in (401, 403):
        return AuthenticationFailed(
            f"the API key was refused (HTTP {status}: {text}); set a valid key in {key_env}",
            **common,
        )
    wait = retry_after(headers, body)
    if codes & _OVERLOAD_CODES or status in _TRANSIENT_STATUSES or status >= 500:
        return TransientError(f"HTTP {status}: {text}", retry_after=wait, **common)
    if status == 429:  # rate limits, DashScope Throttling.*: wait and try again
        return RateLimited(f"rate limited: {text}", retry_after=wait, **common)
    return BadRequest(f"request refused (HTTP {status}): {text}", **common)


def classify_stream_error(
    body: Any, *, provider: str, key_env: str, secrets: Iterable[str] = (), request_id: str = ""
) -> ProviderError:
    """The error for an error object sent after HTTP 200 (in a stream or a 200 body).

    Moderation and quota codes keep their meaning; anything else is transient: the
    response was cut short by the server, not refused.
    """
    detail = error_detail(body)
    codes = _codes(body, detail)
    text = _clip(scrub(detail.message, secrets)) or "error object in the response"
    lowered = text.lower()
    common = {"provider": provider, "provider_code": detail.code, "request_id": request_id}
    if codes & _FILTER_CODES or any(p in lowered for p in _FILTER_PHRASES):
        return ContentFiltered(f"the provider's moderation refused the content: {text}", **common)
    if codes & _QUOTA_CODES or any(p in lowered for p in _QUOTA_PHRASES):
        return QuotaExhausted(
            f"quota or spend limit exhausted ({text}); add credit for the key in {key_env}",
            **common,
        )
    if codes & {"rate_limit_exceeded", "rate_limit_error", "throttling"}:
        return RateLimited(f"rate limited mid-response: {text}", **common)
    return TransientError(f"the provider sent an error after HTTP 200: {text}", **common)
