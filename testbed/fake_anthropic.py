"""A local Anthropic Messages API server (``POST /v1/messages``) for tests.

It serves scripted turns over real HTTP, as typed SSE events (``event: <type>``) or one JSON
message, records every request and checks each against the Messages protocol Anthropic
enforces. Problems are collected and reported by ``verify()`` (the fixture calls it at
teardown), like ``testbed/fake_openai.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testbed.fake_openai import TEST_API_KEY, FakeCall
from testbed.loopback import LoopbackServer

ANTHROPIC_TEST_MODEL = "claude-sonnet-4-6"  # priced in settings, so runs get a cost
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_MAX_BREAKPOINTS = 4


@dataclass(frozen=True)
class ClaudeTurn:
    """One reply of the fake Claude: a message, or an error, and how to send it."""

    text: str = ""
    tool_calls: tuple[FakeCall, ...] = ()
    stop_reason: str | None = None  # default: "tool_use" with calls, else "end_turn"
    # Fields of the reply's usage (input_tokens, output_tokens, cache_read_input_tokens,
    # cache_creation_input_tokens); unset ones are counted from the request.
    usage: dict[str, int] = field(default_factory=dict)
    # An HTTP error reply (status >= 400) with this JSON body.
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # --- streaming quirks ---
    chunk_size: int = 12  # characters of input JSON per input_json_delta
    # Cut the last call's JSON after this many characters and stop with "max_tokens".
    truncate_json_at: int | None = None
    error_after: int | None = None  # send ``event: error`` after this many events
    stream_error: dict[str, Any] | None = None
    cut_after: int | None = None  # drop the connection after this many events

    @property
    def is_error(self) -> bool:
        return self.status >= 400


def claude_turn(
    text: str = "", *, tool_calls: list[FakeCall] | tuple[FakeCall, ...] = (), **quirks: Any
) -> ClaudeTurn:
    """``claude_turn(tool_calls=[call("search_voices", {...})])`` or ``claude_turn("Done")``."""
    return ClaudeTurn(text=text, tool_calls=tuple(tool_calls), **quirks)


def claude_error(
    status: int,
    error_type: str,
    message: str,
    *,
    error_code: str | None = None,
    headers: dict[str, str] | None = None,
) -> ClaudeTurn:
    """An error reply in Anthropic's shape; ``error_code`` goes in ``error.details``."""
    error: dict[str, Any] = {"type": error_type, "message": message}
    if error_code:
        error["details"] = {"error_code": error_code}
    body = {"type": "error", "error": error, "request_id": "req_fake_error"}
    return ClaudeTurn(status=status, body=body, headers=headers or {})


def _text_blocks(system: object) -> bool:
    """The API takes ``system`` as a string or a list of non-empty text blocks."""
    return isinstance(system, str) or (
        isinstance(system, list)
        and all(isinstance(b, dict) and b.get("type") == "text" and b.get("text") for b in system)
    )


def messages_protocol_problems(body: Any) -> list[str]:
    """How a request breaks the Messages protocol (each is a 400 from the real API)."""
    if not isinstance(body, dict):
        return ["body must be a JSON object"]
    problems: list[str] = []
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens is required (a positive integer)")
    system = body.get("system")
    if system is not None and not _text_blocks(system):
        problems.append("system must be a string or a list of non-empty text blocks")
    tools = body.get("tools") or []
    breakpoints = sum(1 for t in tools if isinstance(t, dict) and "cache_control" in t)
    if isinstance(system, list):
        breakpoints += sum(1 for b in system if isinstance(b, dict) and "cache_control" in b)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages must be a non-empty list"]
    seen_ids: set[str] = set()
    open_calls: list[str] = []
    uses_tools = False
    expected = "user"
    for position, message in enumerate(messages):
        where = f"messages.{position}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            problems.append(
                f"{where}: role {role!r}; messages are user or assistant only "
                "(the system prompt is the system parameter)"
            )
            continue
        if role != expected:
            problems.append(f"{where}: {role} message; roles must alternate, starting with user")
        expected = "assistant" if role == "user" else "user"
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            problems.append(f"{where}: content must not be empty")
            continue
        breakpoints += sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)
        for block in blocks:
            if (
                isinstance(block, dict)
                and block.get("type") == "text"
                and not str(block.get("text") or "").strip()
            ):
                problems.append(f"{where}: text blocks must contain non-whitespace text")
        if role == "user":
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            uses_tools = uses_tools or bool(results)
            kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
            if results and kinds[: len(results)] != ["tool_result"] * len(results):
                problems.append(f"{where}: tool_result blocks must come first in the content")
            answered = [b.get("tool_use_id") for b in results]
            for call_id in open_calls:
                if call_id not in answered:
                    problems.append(
                        f"{where}: tool_use {call_id!r} has no tool_result in the next message"
                    )
            for call_id in answered:
                if call_id not in open_calls:
                    problems.append(
                        f"{where}: tool_result {call_id!r} answers no tool_use of the previous "
                        "message"
                    )
            if len(set(answered)) != len(answered):
                problems.append(f"{where}: a tool_use is answered twice")
            open_calls = []
        else:
            open_calls = []
            for block in blocks:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "tool_result":
                    problems.append(f"{where}: tool_result in an assistant message")
                if kind != "tool_use":
                    continue
                uses_tools = True
                call_id = block.get("id")
                if not isinstance(call_id, str) or not _TOOL_ID.fullmatch(call_id):
                    problems.append(
                        f"{where}: tool_use.id {call_id!r} should match pattern '^[a-zA-Z0-9_-]+$'"
                    )
                if call_id in seen_ids:
                    problems.append(f"{where}: tool_use ids must be unique ({call_id!r})")
                seen_ids.add(call_id)
                if not isinstance(block.get("input"), dict):
                    problems.append(f"{where}: tool_use.input must be an object")
                open_calls.append(call_id)
    if open_calls:
        problems.append(f"the request ends with unanswered tool_use blocks: {open_calls}")
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") != "user":
        problems.append("the last message must be the user's (no assistant prefill here)")
    if uses_tools and not tools:
        problems.append("requests with tool_use or tool_result blocks must define tools")
    if breakpoints > _MAX_BREAKPOINTS:
        problems.append(f"{breakpoints} cache_control breakpoints; at most 4 are allowed")
    return problems


class FakeAnthropicServer(LoopbackServer):
    """Start with ``start()``; ``base_url`` is ``http://127.0.0.1:PORT`` (the SDK adds /v1)."""

    def __init__(self, host: str = "127.0.0.1", api_key: str = TEST_API_KEY) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.problems: list[str] = []
        self._script: deque[ClaudeTurn] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._counter = itertools.count(1)
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *turns: ClaudeTurn) -> FakeAnthropicServer:
        with self._lock:
            self._script.extend(turns)
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def verify(self) -> list[str]:
        """Every problem seen: protocol breaks, unscripted requests, unconsumed turns."""
        with self._lock:
            problems = list(self.problems)
            if self._script:
                problems.append(f"{len(self._script)} scripted turn(s) never requested")
        return problems

    def provider_settings(self, api_key: str | None = None) -> dict[str, dict[str, str]]:
        """The ``anthropic`` entry of ``settings.ADSTUDIO_PROVIDERS``, pointed here."""
        return {
            "anthropic": {
                "api_key": self.api_key if api_key is None else api_key,
                "base_url": self.base_url,
                "model": ANTHROPIC_TEST_MODEL,
            }
        }

    def adapter(self, **kwargs: Any) -> Any:
        """The real adapter pointed at this server."""
        from providers.anthropic_messages import AnthropicProvider

        options: dict[str, Any] = {"api_key": self.api_key, "base_url": self.base_url}
        options["timeout"] = 5.0
        options.update(kwargs)
        return AnthropicProvider(**options)

    # --- serving (handler threads) -------------------------------------------------

    def _next_turn(self) -> ClaudeTurn | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(headers)
            return len(self.requests)

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeAnthropicServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return  # a client that hung up (timeout, stream closed early) is normal here
        super().handle_error(request, client_address)


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/messages":
            fake._problem(f"request to {self.path}: only /v1/messages is served")
            self._json(404, _error_body("not_found_error", f"no route {self.path}"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if given != fake.api_key:
            self._json(401, _error_body("authentication_error", "invalid x-api-key"))
            return
        if not headers.get("anthropic-version"):
            fake._problem("request without an anthropic-version header")
        try:
            body = json.loads(raw)
        except ValueError:
            fake._problem("request body is not JSON")
            self._json(400, _error_body("invalid_request_error", "body is not JSON"))
            return
        number = fake._record(body, headers)
        problems = messages_protocol_problems(body)
        if problems:
            for problem in problems:
                fake._problem(f"request {number}: {problem}")
            self._json(400, _error_body("invalid_request_error", "; ".join(problems)))
            return
        reply = fake._next_turn()
        if reply is None:
            fake._problem(f"request {number} was not scripted")
            self._json(400, _error_body("invalid_request_error", "unscripted request"))
            return
        if reply.delay and fake._stopping.wait(reply.delay):
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._reply(reply, body, number)

    def _reply(self, reply: ClaudeTurn, body: dict[str, Any], number: int) -> None:
        headers = {"request-id": f"req_fake_{number}", **reply.headers}
        if reply.is_error:
            self._json(reply.status, reply.body, headers)
        elif body.get("stream"):
            self._stream(reply, body, number, headers)
        else:
            self._json(200, _message(reply, body, number), headers)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stream(
        self, reply: ClaudeTurn, body: dict[str, Any], number: int, headers: dict[str, str]
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for sent, event in enumerate(_events(reply, body, number)):
            if reply.cut_after is not None and sent >= reply.cut_after:
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # mid-body: no terminating chunk
                return
            if reply.error_after is not None and sent >= reply.error_after:
                error = reply.stream_error or {"type": "overloaded_error", "message": "Overloaded"}
                self._event({"type": "error", "error": error})
                break
            self._event(event)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _event(self, event: dict[str, Any]) -> None:
        data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def _call_ids(reply: ClaudeTurn, number: int) -> list[tuple[str, FakeCall]]:
    return [
        (fc.id if fc.id is not None else f"toolu_fake_{number}_{i}", fc)
        for i, fc in enumerate(reply.tool_calls)
    ]


def _stop_reason(reply: ClaudeTurn) -> str:
    if reply.truncate_json_at is not None:
        return "max_tokens"
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def _usage(reply: ClaudeTurn, body: dict[str, Any]) -> dict[str, int]:
    prompt = json.dumps([body.get("system"), body.get("messages"), body.get("tools")])
    output = len(reply.text) + sum(len(c.wire_arguments) for c in reply.tool_calls)
    usage = {
        "input_tokens": max(1, len(prompt) // 4),
        "output_tokens": max(1, output // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    usage.update(reply.usage)
    return usage


def _message(reply: ClaudeTurn, body: dict[str, Any], number: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call_id, fc in _call_ids(reply, number):
        content.append(
            {"type": "tool_use", "id": call_id, "name": fc.name, "input": dict(fc.arguments)}
        )
    return {
        "id": f"msg_fake_{number}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(reply, body),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _events(reply: ClaudeTurn, body: dict[str, Any], number: int) -> Iterator[dict[str, Any]]:
    """The event sequence of the real API: start, ping, blocks, message delta, stop."""
    usage = _usage(reply, body)
    start_usage = {**usage, "output_tokens": 1}
    yield {
        "type": "message_start",
        "message": {
            "id": f"msg_fake_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", ""),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        },
    }
    yield {"type": "ping"}
    index = 0
    if reply.text:
        yield {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        }
        for piece in _pieces(reply.text, 8):
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": piece},
            }
        yield {"type": "content_block_stop", "index": index}
        index += 1
    calls = _call_ids(reply, number)
    for position, (call_id, fc) in enumerate(calls):
        yield {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": fc.name, "input": {}},
        }
        arguments = fc.wire_arguments
        last = position == len(calls) - 1
        if last and reply.truncate_json_at is not None:
            arguments = arguments[: reply.truncate_json_at]
        for piece in _pieces(arguments, reply.chunk_size):
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
        yield {"type": "content_block_stop", "index": index}
        index += 1
    # message_delta usage is cumulative (the final counts, input included), not an increment.
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
        "usage": usage,
    }
    yield {"type": "message_stop"}
