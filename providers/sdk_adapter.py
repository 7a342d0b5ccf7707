"""What the adapters on an official SDK share (openai_compat, anthropic_messages): the client,
the call and its timing, and one translation of SDK exceptions into our error hierarchy, so
the adapters cannot drift apart in how they fail.
"""

from __future__ import annotations

import ssl
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import httpx2  # the HTTP client under both SDKs

from providers.base import (
    AssistantMessage,
    AuthenticationFailed,
    GenerateRequest,
    Interrupted,
    ModelResponse,
    ProviderError,
    StopReason,
    TextCallback,
    TransientError,
    Usage,
    new_tool_call_id,
)
from providers.errors import classify_status, classify_stream_error, scrub
from providers.interrupt import Abandoned, interrupted, waited
from providers.profiles import ProviderProfile
from providers.tls import httpx2_context


@dataclass(frozen=True)
class SDK:
    """What an adapter takes from its SDK: the client class and the exceptions it raises.

    The openai and anthropic SDKs come from one generator: each has these four exception
    classes, with the same meanings and attributes.
    """

    client: Callable[..., Any]
    http_client: Callable[..., httpx2.Client]  # the SDK's own default one (its DefaultHttpxClient)
    status_error: type[Exception]  # an HTTP error reply: status_code, body, message, response
    timeout_error: type[Exception]  # no response in time (a subclass of connection_error)
    connection_error: type[Exception]  # no connection, or it broke before the response
    error: type[Exception]  # the base of everything else the SDK raises

    def new_client(self, **options: Any) -> Any:
        """The SDK's client on its own default HTTP client, with the process's TLS context
        (``providers.tls``) rather than a new one; that HTTP client is closed with it."""
        http_client = self.http_client(verify=httpx2_context())
        client = self.client(http_client=http_client, **options)
        weakref.finalize(client, http_client.close)
        return client


class Reply(NamedTuple):
    """The model's answer as an adapter reads it from its wire format."""

    message: AssistantMessage
    stop_reason: StopReason
    usage: Usage
    response_id: str  # the provider's id for the response, used when no header names one


class SDKErrors:
    """The translation of an official SDK's exceptions into our hierarchy, for any adapter
    on that SDK (a chat adapter here, a speech adapter in ``speech``): wrap each call in
    ``_map_api_errors()``.

    A subclass names its ``sdk`` and request id headers, and sets ``name`` (the provider),
    ``key_env`` (the variable its key comes from), ``timeout`` (seconds) and ``_api_key``.
    """

    sdk: ClassVar[SDK]
    # Response headers that may carry the provider's request id, in order of preference.
    request_id_headers: ClassVar[tuple[str, ...]]
    name: str
    key_env: str
    timeout: float
    _api_key: str

    # --- errors -------------------------------------------------------------------------

    @contextmanager
    def _map_api_errors(self) -> Iterator[None]:
        """The SDK's exceptions, and its HTTP client's, as ours: raised from None, so no
        traceback or message of the SDK (which may quote the key) travels on."""
        sdk = self.sdk
        try:
            yield
        except sdk.status_error as exc:
            raise self._status_error(exc) from None
        # The SDK's timeout comes while waiting for the response, httpx's while reading a
        # body the SDK has already handed over (a stream that stalls).
        except (sdk.timeout_error, httpx2.TimeoutException):
            raise TransientError(
                f"no response within {self.timeout:g}s", provider=self.name
            ) from None
        except sdk.connection_error as exc:
            raise TransientError(
                f"connection failed: {self._scrub(str(exc.__cause__ or exc))}", provider=self.name
            ) from None
        except (httpx2.HTTPError, ssl.SSLError) as exc:  # a body read after the SDK let go
            raise TransientError(
                f"connection failed while reading the response: {type(exc).__name__}",
                provider=self.name,
            ) from None
        except sdk.error as exc:
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

    def _status_error(self, exc: Any) -> ProviderError:
        """Our error for the SDK's status error: an HTTP error reply, or an error event in a
        200 stream (which the anthropic SDK raises as a status error with status 200)."""
        response = exc.response
        context = self._error_context(self._request_id(response.headers))
        body: Any = exc.body
        if body is None:
            try:
                body = response.text
            except Exception:  # a streamed error body that cannot be read any more
                body = exc.message
        if exc.status_code < 400:
            return classify_stream_error(body, **context)
        return self._classify_status(exc.status_code, body, response.headers, context)

    def _classify_status(
        self, status: int, body: Any, headers: Mapping[str, str], context: dict[str, Any]
    ) -> ProviderError:
        """The error for an HTTP error reply; an adapter whose API has replies of its own to
        tell apart first overrides this."""
        return classify_status(status=status, body=body, headers=dict(headers), **context)

    def _json_object(self, data: Any, what: str, request_id: str) -> Mapping[str, Any]:
        """``data`` when it is a JSON object; otherwise a TransientError saying ``what`` was
        not (a proxy's error page, a list where the format has an object)."""
        if not isinstance(data, Mapping):
            raise TransientError(
                f"{what} is not a JSON object: {self._scrub(str(data))[:200]!r}",
                provider=self.name,
                request_id=request_id,
            )
        return data

    def _cut_short(self, missing: str, request_id: str) -> TransientError:
        """The error for a stream that ended before the model said it was done: worth
        another try, and nothing of it is kept."""
        return TransientError(
            f"stream ended without {missing} (cut short); nothing was kept",
            provider=self.name,
            request_id=request_id,
        )

    def _request_id(self, headers: Mapping[str, str]) -> str:
        for name in self.request_id_headers:
            value = headers.get(name)
            if value:
                return str(value)
        return ""

    def _scrub(self, text: str) -> str:
        return scrub(text, (self._api_key,))

    def _error_context(self, request_id: str = "") -> dict[str, Any]:
        """The keyword arguments every ``errors.classify_*`` call takes."""
        return {
            "provider": self.name,
            "key_env": self.key_env,
            "secrets": (self._api_key,),
            "request_id": request_id,
        }


class SDKAdapter[Client, Reader](SDKErrors, ABC):
    """A ``ChatProvider`` on an official SDK: a profile, a base URL and a key.

    A subclass names its SDK and supplies the wire: the request body, the streamed and the
    whole call (feeding a ``Reader``, its format's accumulator), and the reading of the
    answer. Everything that can fail is translated by ``SDKErrors``.
    """

    default_profile: ClassVar[ProviderProfile]
    # The API's address for a profile that names none (the SDK's own default).
    sdk_base_url: ClassVar[str] = ""

    def __init__(
        self,
        *,
        profile: ProviderProfile | None = None,
        api_key: str,
        base_url: str = "",
        name: str = "",
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        id_factory: Callable[[], str] = new_tool_call_id,
    ) -> None:
        self.profile = profile or self.default_profile
        self.name = name or self.profile.name
        self.key_env = self.profile.key_env
        self.base_url = base_url or self.profile.default_base_url or self.sdk_base_url
        self.timeout = timeout
        self._api_key = api_key
        self._id_factory = id_factory
        self._client: Client | None = None
        if api_key:
            self._client = self.sdk.new_client(
                api_key=api_key,  # explicit, so the SDK reads no credentials of its own
                base_url=self.base_url,
                # One retry policy (resilience.generate), not two stacked ones.
                max_retries=0,
                timeout=httpx2.Timeout(timeout, connect=connect_timeout),
            )

    def __repr__(self) -> str:  # never the key
        return f"<{type(self).__name__} {self.name} {self.base_url}>"

    def generate(
        self, request: GenerateRequest, *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        """One complete response, streamed when the caller asks and the profile allows it
        for this request; any failure is raised as a ``ProviderError``."""
        if self._client is None:
            raise AuthenticationFailed(
                f"no API key: set {self.profile.key_env} or choose another provider",
                provider=self.name,
            )
        stream = request.options.stream and self.profile.may_stream(
            has_tools=bool(request.tools),
            parallel_tool_calls=request.options.parallel_tool_calls,
        )
        payload = self._payload(request, stream=stream)
        reader = self._reader(on_text)
        started = time.monotonic()
        try:
            with self._map_api_errors():
                if stream:
                    request_id = self._stream(payload, reader)
                else:  # nothing to read until the reply is whole: a cancel ends the wait
                    request_id = waited(lambda: self._complete(payload, reader))
        except (ProviderError, Abandoned):
            if interrupted():  # the read failed because the response was closed on purpose
                message = "the call was interrupted: its run was cancelled"
                raise Interrupted(message, provider=self.name) from None
            raise
        latency_ms = int((time.monotonic() - started) * 1000)
        reply = self._reply(reader, payload)
        return ModelResponse(
            message=reply.message,
            stop_reason=reply.stop_reason,
            usage=reply.usage,
            provider=self.name,
            model=request.model,
            request_id=request_id or reply.response_id,
            latency_ms=latency_ms,
            response_id=reply.response_id,
        )

    # --- the wire, per adapter --------------------------------------------------------

    @abstractmethod
    def _payload(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        """The request body in the wire format: plain JSON data, no SDK types."""

    @abstractmethod
    def _reader(self, on_text: TextCallback | None) -> Reader:
        """A new accumulator for one response, passing text to ``on_text`` as it comes."""

    @abstractmethod
    def _stream(self, payload: dict[str, Any], reader: Reader) -> str:
        """The streamed call, read into ``reader``; returns the request id."""

    @abstractmethod
    def _complete(self, payload: dict[str, Any], reader: Reader) -> str:
        """The call answered whole, read into ``reader``; returns the request id."""

    @abstractmethod
    def _reply(self, reader: Reader, payload: dict[str, Any]) -> Reply:
        """The answer ``reader`` assembled; usage is estimated from ``payload`` when the
        provider reported none."""
