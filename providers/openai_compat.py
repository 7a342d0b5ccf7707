"""The adapter for every OpenAI-compatible chat-completions API (OpenAI, DashScope, Moonshot,
Ollama, vLLM, Gemini's compatible endpoint), on the official openai SDK.

Provider differences come from a ``ProviderProfile``; the call and the translation of the
SDK's exceptions into our hierarchy are ``SDKAdapter``'s. Here is the wire: the request
body, the stream, and the reading of a whole completion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpx2  # the openai SDK's HTTP client
from openai import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    DefaultHttpxClient,
    OpenAI,
    OpenAIError,
)

from providers import chat_format
from providers.accumulator import StreamAccumulator
from providers.base import GenerateRequest, TextCallback, TransientError
from providers.errors import classify_stream_error
from providers.interrupt import reading, waited
from providers.profiles import OPENAI
from providers.sdk_adapter import SDK, Reply, SDKAdapter

# The openai SDK's client and exceptions: every adapter on it (chat here, speech in
# ``speech.openai_speech``) translates the same ones.
OPENAI_SDK = SDK(
    OpenAI, DefaultHttpxClient, APIStatusError, APITimeoutError, APIConnectionError, OpenAIError
)


class OpenAICompatProvider(SDKAdapter[OpenAI, StreamAccumulator]):
    """One provider: a profile, a base URL and a key, behind the ``ChatProvider`` protocol."""

    sdk = OPENAI_SDK
    default_profile = OPENAI
    sdk_base_url = "https://api.openai.com/v1"
    request_id_headers = ("x-request-id", "x-dashscope-request-id", "msh-request-id", "request-id")

    def _payload(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        return chat_format.build_payload(request, self.profile, provider=self.name, stream=stream)

    def _reader(self, on_text: TextCallback | None) -> StreamAccumulator:
        return StreamAccumulator(on_text=on_text, id_factory=self._id_factory)

    def _post(self, payload: dict[str, Any], *, stream: bool) -> httpx2.Response:
        """The request through the SDK's client (auth, headers, timeouts, status errors)
        with the body as built: the SDK's typed-parameter transform would walk the whole
        history on every call, for nothing (most of the client's CPU per call)."""
        assert self._client is not None
        return self._client.post(
            "/chat/completions", cast_to=httpx2.Response, body=payload, stream=stream
        )

    def _stream(self, payload: dict[str, Any], accumulator: StreamAccumulator) -> str:
        # Until the first token the provider sends nothing: a cancel ends that wait too.
        response = waited(lambda: self._post(payload, stream=True), discard=_closed)
        request_id = self._request_id(response.headers)
        if _is_json(response.headers):
            # Some OpenAI-compatible servers ignore "stream": true and answer with one
            # whole chat.completion: read it as such, not as a stream with no events.
            try:
                response.read()
            finally:
                response.close()
            return self._read_completion(response, accumulator)
        try:
            with reading(response):
                for data in sse_data(response.iter_lines()):
                    if data.startswith("[DONE]"):
                        # Read on to the end of the body, so the connection goes back to
                        # the pool instead of being closed (a new connection, and TLS
                        # handshake, per call).
                        continue
                    chunk = self._json_object(json.loads(data), "stream chunk", request_id)
                    if chunk.get("error"):  # an error object after HTTP 200
                        context = self._error_context(request_id)
                        raise classify_stream_error(chunk["error"], **context)
                    accumulator.add_chunk(chunk)
        finally:
            response.close()
        if not accumulator.finished:
            raise self._cut_short(f"a finish reason after {accumulator.chunks} chunks", request_id)
        return request_id

    def _complete(self, payload: dict[str, Any], accumulator: StreamAccumulator) -> str:
        return self._read_completion(self._post(payload, stream=False), accumulator)

    def _read_completion(self, response: httpx2.Response, accumulator: StreamAccumulator) -> str:
        """A whole chat.completion body into ``accumulator``; returns the request id."""
        request_id = self._request_id(response.headers)
        data = self._json_object(response.json(), "response body", request_id)
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

    def _reply(self, accumulator: StreamAccumulator, payload: dict[str, Any]) -> Reply:
        assembled = accumulator.result()
        message = chat_format.assistant_message(assembled, provider=self.name)
        usage = chat_format.usage_from(assembled.usage) or chat_format.estimated_usage(
            payload, message
        )
        stop_reason = chat_format.stop_reason(
            assembled.finish_reason, has_tool_calls=bool(message.tool_calls)
        )
        return Reply(message, stop_reason, usage, assembled.response_id)


def _closed(response: httpx2.Response) -> None:
    response.close()


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
