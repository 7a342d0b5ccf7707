"""The adapter for Anthropic's Messages API (Claude), on the official anthropic SDK.

The wire format lives in ``anthropic_format``; the call and the translation of the SDK's
exceptions into our hierarchy are ``SDKAdapter``'s. Here are the stream, the whole message,
and the spend-limit replies only Anthropic sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anthropic import (
    Anthropic,
    AnthropicError,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    DefaultHttpxClient,
)

from providers import anthropic_format
from providers.anthropic_format import MessageAssembler
from providers.base import (
    GenerateRequest,
    ProviderError,
    QuotaExhausted,
    TextCallback,
)
from providers.errors import classify_stream_error, error_detail, scrub
from providers.interrupt import reading, waited
from providers.profiles import ANTHROPIC
from providers.sdk_adapter import SDK, Reply, SDKAdapter

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


class AnthropicProvider(SDKAdapter[Anthropic, MessageAssembler]):
    """Claude behind the ``ChatProvider`` protocol: a profile, a base URL and a key."""

    sdk = SDK(
        Anthropic,
        DefaultHttpxClient,
        APIStatusError,
        APITimeoutError,
        APIConnectionError,
        AnthropicError,
    )
    default_profile = ANTHROPIC
    request_id_headers = ("request-id", "x-request-id")

    def _payload(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        return anthropic_format.build_params(request, self.profile, stream=stream)

    def _reader(self, on_text: TextCallback | None) -> MessageAssembler:
        return MessageAssembler(on_text=on_text, id_factory=self._id_factory)

    def _post(self, params: dict[str, Any]) -> Any:
        """The raw response to a Messages request: its headers, and the body as sent rather
        than the SDK's model of it."""
        assert self._client is not None
        return self._client.messages.with_raw_response.create(**params)

    def _complete(self, params: dict[str, Any], assembler: MessageAssembler) -> str:
        raw = self._post(params)
        request_id = self._request_id(raw.headers)
        data = self._json_object(raw.json(), "response body", request_id)
        if data.get("type") == "error" or data.get("error"):
            raise classify_stream_error(data, **self._error_context(request_id))
        assembler.add_message(data)  # each text block reaches on_text whole
        return request_id

    def _stream(self, params: dict[str, Any], assembler: MessageAssembler) -> str:
        # Until the first token the provider sends nothing: a cancel ends that wait too.
        raw = waited(lambda: self._post(params), discard=lambda r: r.http_response.close())
        request_id = self._request_id(raw.headers)
        events = raw.parse()
        try:
            # An ``event: error`` after HTTP 200 is raised by the SDK as a status error with
            # status 200, which SDKAdapter._status_error sends to classify_stream_error.
            with reading(raw.http_response):
                for event in events:
                    data = event.to_dict() if hasattr(event, "to_dict") else event
                    assembler.add_event(self._json_object(data, "stream event", request_id))
        finally:
            events.close()
        if not assembler.finished:
            raise self._cut_short(f"a stop reason after {assembler.events} events", request_id)
        return request_id

    def _reply(self, assembler: MessageAssembler, params: dict[str, Any]) -> Reply:
        assembled = assembler.result()
        message = anthropic_format.assistant_message(assembled)
        usage = anthropic_format.usage_from(assembled.usage) or anthropic_format.estimated_usage(
            params, message
        )
        stop_reason = anthropic_format.stop_reason(
            assembled.stop_reason, has_tool_calls=bool(message.tool_calls)
        )
        return Reply(message, stop_reason, usage, assembled.message_id)

    def _classify_status(
        self, status: int, body: Any, headers: Mapping[str, str], context: dict[str, Any]
    ) -> ProviderError:
        """A spend-limit or credit reply is final whatever its status (a 429 among them)."""
        quota = _spend_limit(body, status=status, context=context)
        return quota or super()._classify_status(status, body, headers, context)


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
