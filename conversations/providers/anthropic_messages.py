"""The adapter for Anthropic's Messages API (Claude), on the official anthropic SDK.

The wire format lives in ``anthropic_format``; here are the client, the stream, and the
translation of the SDK's exceptions into our hierarchy, so nothing above this module ever
sees the SDK.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any

import anthropic
import httpx2  # the anthropic SDK's HTTP client

from conversations.providers import anthropic_format
from conversations.providers.anthropic_format import MessageAssembler
from conversations.providers.base import (
    AuthenticationFailed,
    GenerateRequest,
    ModelResponse,
    ProviderError,
    QuotaExhausted,
    TextCallback,
    TransientError,
    new_tool_call_id,
)
from conversations.providers.errors import (
    classify_status,
    classify_stream_error,
    error_detail,
    scrub,
)
from conversations.providers.profiles import ANTHROPIC, ProviderProfile

# A 429 (or 400/402) that no wait will fix. Anthropic names the cause in
# error.details.error_code (the SDK maps these to EnforcedSpendLimitReachedError, "the
# organization has crossed the monthly API usage threshold of its API tier", and
# ContractSpendLimitReachedError); an account out of credit is a 400 "Your credit balance is
# too low to access the Anthropic API", and a user-set limit a 400 "You have reached your
# specified API usage limits". type "billing_error" is the API's own category for these.
_SPEND_LIMIT_CODES = {
    "enforced_spend_limit_reached",
    "contract_spend_limit_reached",
    "linked_organization_spend_limit_reached",
    "linked_organization_billing_unavailable",
}
_SPEND_LIMIT_TYPES = {"billing_error"}
_SPEND_LIMIT_PHRASES = (
    "credit balance is too low",
    "reached your specified api usage limits",
    "spend limit",
)


class AnthropicProvider:
    """Claude behind the ``ChatProvider`` protocol: a profile, a base URL and a key."""

    def __init__(
        self,
        *,
        profile: ProviderProfile = ANTHROPIC,
        api_key: str,
        base_url: str = "",
        name: str = "",
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        id_factory: Callable[[], str] = new_tool_call_id,
    ) -> None:
        self.name = name or profile.name
        self.profile = profile
        self.base_url = base_url or profile.default_base_url
        self.timeout = timeout
        self._api_key = api_key
        self._id_factory = id_factory
        self._client: anthropic.Anthropic | None = None
        if api_key:
            self._client = anthropic.Anthropic(
                api_key=api_key,  # explicit, so the SDK reads no credentials of its own
                base_url=self.base_url,
                # One retry policy (resilience.generate), not two stacked ones.
                max_retries=0,
                timeout=anthropic.Timeout(timeout, connect=connect_timeout),
            )

    def __repr__(self) -> str:  # never the key
        return f"<AnthropicProvider {self.name} {self.base_url}>"

    def generate(
        self, request: GenerateRequest, *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        if self._client is None:
            raise AuthenticationFailed(
                f"no API key: set {self.profile.key_env} or choose another provider",
                provider=self.name,
            )
        stream = request.options.stream and self.profile.may_stream(
            has_tools=bool(request.tools),
            parallel_tool_calls=request.options.parallel_tool_calls,
        )
        params = anthropic_format.build_params(request, self.profile, stream=stream)
        assembler = MessageAssembler(on_text=on_text, id_factory=self._id_factory)
        started = time.monotonic()
        request_id = ""
        try:
            if stream:
                request_id = self._stream(params, assembler)
            else:
                request_id = self._complete(params, assembler)
        except ProviderError as exc:
            exc.provider = exc.provider or self.name
            exc.request_id = exc.request_id or request_id
            raise
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc) from None
        except anthropic.APITimeoutError:
            raise TransientError(
                f"no response within {self.timeout:g}s", provider=self.name
            ) from None
        except anthropic.APIConnectionError as exc:
            raise TransientError(
                f"connection failed: {self._scrub(str(exc.__cause__ or exc))}", provider=self.name
            ) from None
        except anthropic.APIError as exc:
            raise classify_stream_error(
                exc.body if exc.body is not None else exc.message, **self._error_context()
            ) from None
        except (httpx2.HTTPError, ssl.SSLError) as exc:  # a body read after the SDK let go
            raise TransientError(
                f"connection failed while reading the response: {type(exc).__name__}",
                provider=self.name,
            ) from None
        except anthropic.AnthropicError as exc:
            raise TransientError(
                f"SDK error: {self._scrub(str(exc))}", provider=self.name
            ) from None
        # A body or event that is not JSON (ValueError), or JSON of the wrong shape.
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise TransientError(
                f"malformed response ({type(exc).__name__}: {self._scrub(str(exc))[:200]})",
                provider=self.name,
            ) from None
        latency_ms = int((time.monotonic() - started) * 1000)
        assembled = assembler.result()
        message = anthropic_format.assistant_message(assembled)
        usage = anthropic_format.usage_from(assembled.usage) or anthropic_format.estimated_usage(
            params, message
        )
        return ModelResponse(
            message=message,
            stop_reason=anthropic_format.stop_reason(
                assembled.stop_reason, has_tool_calls=bool(message.tool_calls)
            ),
            usage=usage,
            provider=self.name,
            model=request.model,
            request_id=request_id or assembled.message_id,
            latency_ms=latency_ms,
        )

    # --- wire ------------------------------------------------------------------------

    def _stream(self, params: dict[str, Any], assembler: MessageAssembler) -> str:
        assert self._client is not None
        raw = self._client.messages.with_raw_response.create(**params)
        request_id = _request_id(raw.headers)
        events = raw.parse()
        try:
            for event in events:
                # An ``event: error`` after HTTP 200 is raised by the SDK as a status error
                # with status 200; _status_error sends it to classify_stream_error.
                data = event.to_dict() if hasattr(event, "to_dict") else event
                if not isinstance(data, Mapping):
                    raise TransientError(
                        f"stream event is not a JSON object: {str(data)[:200]}",
                        provider=self.name,
                        request_id=request_id,
                    )
                assembler.add_event(data)
        finally:
            events.close()
        if not assembler.finished:
            raise TransientError(
                f"stream ended without a stop reason after {assembler.events} events "
                "(cut short); nothing was kept",
                provider=self.name,
                request_id=request_id,
            )
        return request_id

    def _complete(self, params: dict[str, Any], assembler: MessageAssembler) -> str:
        assert self._client is not None
        raw = self._client.messages.with_raw_response.create(**params)
        request_id = _request_id(raw.headers)
        data = raw.json()  # the body as sent, not the SDK's model of it
        if not isinstance(data, Mapping):
            raise TransientError(
                f"response body is not a JSON object: {self._scrub(str(data))[:200]!r}",
                provider=self.name,
                request_id=request_id,
            )
        if data.get("type") == "error" or data.get("error"):
            raise classify_stream_error(data, **self._error_context(request_id))
        assembler.add_message(data)  # each text block reaches on_text whole
        return request_id

    # --- errors ----------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return scrub(text, (self._api_key,))

    def _error_context(self, request_id: str = "") -> dict[str, Any]:
        return {
            "provider": self.name,
            "key_env": self.profile.key_env,
            "secrets": (self._api_key,),
            "request_id": request_id,
        }

    def _status_error(self, exc: anthropic.APIStatusError) -> ProviderError:
        response = exc.response
        request_id = _request_id(response.headers)
        body: Any = exc.body
        if body is None:
            try:
                body = response.text
            except Exception:  # a streamed error body that cannot be read any more
                body = exc.message
        if exc.status_code < 400:  # an ``event: error`` inside a 200 stream
            return classify_stream_error(body, **self._error_context(request_id))
        quota = _spend_limit(body, status=exc.status_code, context=self._error_context(request_id))
        if quota is not None:
            return quota
        return classify_status(
            status=exc.status_code,
            body=body,
            headers=dict(response.headers),
            **self._error_context(request_id),
        )


def _spend_limit(body: Any, *, status: int, context: dict[str, Any]) -> QuotaExhausted | None:
    """QuotaExhausted for a spend-limit or credit reply (moves on to the next provider)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    error = error if isinstance(error, Mapping) else {}
    details = error.get("details") if isinstance(error.get("details"), Mapping) else {}
    code = str(details.get("error_code") or "")
    kind = str(error.get("type") or "")
    text = " ".join(scrub(error_detail(body).message, context["secrets"]).split())[:300]
    text = text or f"HTTP {status}"
    if not (
        code in _SPEND_LIMIT_CODES
        or kind in _SPEND_LIMIT_TYPES
        or any(phrase in text.lower() for phrase in _SPEND_LIMIT_PHRASES)
    ):
        return None
    return QuotaExhausted(
        f"spend limit or credit exhausted ({text}); add credit or raise the limit for the key "
        f"in {context['key_env']}, or route to another provider",
        provider=context["provider"],
        status=status,
        provider_code=code or kind,
        request_id=context["request_id"],
    )


def _request_id(headers: Mapping[str, str]) -> str:
    return str(headers.get("request-id") or headers.get("x-request-id") or "")
