"""The adapter for every OpenAI-compatible chat-completions API (OpenAI, DashScope, Moonshot,
Ollama, vLLM, Gemini's compatible endpoint), on the official openai SDK.

Provider differences come from a ``ProviderProfile``; the SDK's exceptions are translated
here into our hierarchy, so nothing above this module ever sees the SDK.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import httpx2  # the openai SDK's HTTP client
import openai

from conversations.providers import chat_format
from conversations.providers.accumulator import Assembled, StreamAccumulator
from conversations.providers.base import (
    AuthenticationFailed,
    GenerateRequest,
    ModelResponse,
    ProviderError,
    TextCallback,
    TransientError,
    new_tool_call_id,
)
from conversations.providers.errors import classify_status, classify_stream_error, scrub
from conversations.providers.profiles import ProviderProfile

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_REQUEST_ID_HEADERS = ("x-request-id", "x-dashscope-request-id", "msh-request-id", "request-id")


class OpenAICompatProvider:
    """One provider: a profile, a base URL and a key, behind the ``ChatProvider`` protocol."""

    def __init__(
        self,
        *,
        profile: ProviderProfile,
        api_key: str,
        base_url: str = "",
        name: str = "",
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        id_factory: Callable[[], str] = new_tool_call_id,
    ) -> None:
        self.name = name or profile.name
        self.profile = profile
        self.base_url = base_url or profile.default_base_url or OPENAI_DEFAULT_BASE_URL
        self.timeout = timeout
        self._api_key = api_key
        self._id_factory = id_factory
        self._client: openai.OpenAI | None = None
        if api_key:
            self._client = openai.OpenAI(
                api_key=api_key,
                base_url=self.base_url,
                # One retry policy (resilience.generate), not two stacked ones.
                max_retries=0,
                timeout=openai.Timeout(timeout, connect=connect_timeout),
            )

    def __repr__(self) -> str:  # never the key
        return f"<OpenAICompatProvider {self.name} {self.base_url}>"

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
        payload = chat_format.build_payload(
            request, self.profile, provider=self.name, stream=stream
        )
        started = time.monotonic()
        accumulator = StreamAccumulator(on_text=on_text, id_factory=self._id_factory)
        request_id = ""
        try:
            if stream:
                request_id = self._stream(payload, accumulator)
            else:
                request_id = self._complete(payload, accumulator)
        except ProviderError as exc:
            exc.provider = exc.provider or self.name
            exc.request_id = exc.request_id or request_id
            raise
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except (openai.APITimeoutError, httpx2.TimeoutException):
            raise TransientError(
                f"no response within {self.timeout:g}s", provider=self.name
            ) from None
        except openai.APIConnectionError as exc:
            raise TransientError(
                f"connection failed: {self._scrub(str(exc.__cause__ or exc))}", provider=self.name
            ) from None
        except (httpx2.HTTPError, ssl.SSLError) as exc:  # a body read after the SDK let go
            raise TransientError(
                f"connection failed while reading the response: {type(exc).__name__}",
                provider=self.name,
            ) from None
        except openai.OpenAIError as exc:
            raise TransientError(
                f"SDK error: {self._scrub(str(exc))}", provider=self.name
            ) from None
        # A body or chunk that is not JSON (ValueError), or JSON of the wrong shape: a list
        # where an object belongs, a number where a list does.
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise TransientError(
                f"malformed response ({type(exc).__name__}: {self._scrub(str(exc))[:200]})",
                provider=self.name,
            ) from None
        latency_ms = int((time.monotonic() - started) * 1000)
        return self._response(accumulator.result(), payload, request, request_id, latency_ms)

    # --- wire ------------------------------------------------------------------------

    def _post(self, payload: dict[str, Any], *, stream: bool) -> httpx2.Response:
        """The request through the SDK's client (auth, headers, timeouts, status errors)
        with the body as built: the SDK's typed-parameter transform would walk the whole
        history on every call, for nothing (most of the client's CPU per call)."""
        assert self._client is not None
        return self._client.post(
            "/chat/completions", cast_to=httpx2.Response, body=payload, stream=stream
        )

    def _stream(self, payload: dict[str, Any], accumulator: StreamAccumulator) -> str:
        response = self._post(payload, stream=True)
        request_id = _request_id(response.headers)
        if _is_json(response.headers):
            # Some OpenAI-compatible servers ignore "stream": true and answer with one
            # whole chat.completion: read it as such, not as a stream with no events.
            try:
                response.read()
            finally:
                response.close()
            return self._read_completion(response, accumulator)
        try:
            for data in sse_data(response.iter_lines()):
                if data.startswith("[DONE]"):
                    # Read on to the end of the body, so the connection goes back to
                    # the pool instead of being closed (a new connection, and TLS
                    # handshake, per call).
                    continue
                chunk = json.loads(data)
                if not isinstance(chunk, Mapping):
                    raise TransientError(
                        f"stream chunk is not a JSON object: {str(chunk)[:200]}",
                        provider=self.name,
                        request_id=request_id,
                    )
                if chunk.get("error"):  # an error object after HTTP 200
                    raise classify_stream_error(chunk["error"], **self._error_context(request_id))
                accumulator.add_chunk(chunk)
        finally:
            response.close()
        if not accumulator.finished:
            raise TransientError(
                f"stream ended without a finish reason after {accumulator.chunks} chunks "
                "(cut short); nothing was kept",
                provider=self.name,
                request_id=request_id,
            )
        return request_id

    def _complete(self, payload: dict[str, Any], accumulator: StreamAccumulator) -> str:
        return self._read_completion(self._post(payload, stream=False), accumulator)

    def _read_completion(self, response: httpx2.Response, accumulator: StreamAccumulator) -> str:
        """A whole chat.completion body into ``accumulator``; returns the request id."""
        request_id = _request_id(response.headers)
        data = response.json()
        if not isinstance(data, Mapping):
            raise TransientError(
                f"response body is not a JSON object: {self._scrub(str(data))[:200]!r}",
                provider=self.name,
                request_id=request_id,
            )
        if data.get("error"):
            raise classify_stream_error(data["error"], **self._error_context(request_id))
        choices = data.get("choices") or []
        if not choices or not isinstance(choices[0], Mapping):
            raise TransientError(
                "response has no choices", provider=self.name, request_id=request_id
            )
        choice = choices[0]
        accumulator.response_id = str(data.get("id") or "")
        accumulator.model = str(data.get("model") or "")
        accumulator.usage = data.get("usage") or choice.get("usage")
        # The whole text reaches on_text at once, through the accumulator.
        accumulator.add_message(choice.get("message") or {}, choice.get("finish_reason"))
        return request_id

    def _response(
        self,
        assembled: Assembled,
        payload: dict[str, Any],
        request: GenerateRequest,
        request_id: str,
        latency_ms: int,
    ) -> ModelResponse:
        message = chat_format.assistant_message(assembled, provider=self.name)
        usage = chat_format.usage_from(assembled.usage) or chat_format.estimated_usage(
            payload, message
        )
        return ModelResponse(
            message=message,
            stop_reason=chat_format.stop_reason(
                assembled.finish_reason, has_tool_calls=bool(message.tool_calls)
            ),
            usage=usage,
            provider=self.name,
            model=request.model,
            request_id=request_id or assembled.response_id,
            latency_ms=latency_ms,
        )

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

    def _status_error(self, exc: openai.APIStatusError) -> ProviderError:
        response = exc.response
        body: Any = exc.body
        if body is None:
            try:
                body = response.text
            except Exception:  # a streamed error body that cannot be read any more
                body = exc.message
        return classify_status(
            status=exc.status_code,
            body=body,
            headers=dict(response.headers),
            **self._error_context(_request_id(response.headers)),
        )


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data of each server-sent event in ``lines`` (the SSE format: ``data:`` lines
    joined until a blank line; comments and other fields ignored)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def _is_json(headers: Mapping[str, str]) -> bool:
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")


def _request_id(headers: Mapping[str, str]) -> str:
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return str(value)
    return ""
