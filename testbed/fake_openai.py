"""A local OpenAI-compatible chat-completions server for tests and benchmarks.

It serves scripted turns (or a ``responder`` callable) over real HTTP, streaming (SSE) or
not, with switches for the quirks real providers have; it records every request and
checks each one against the message protocol. Problems are collected, not raised in the
server thread, and reported by ``verify()`` (the pytest fixture calls it at teardown).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testbed.loopback import LoopbackServer

TEST_API_KEY = "sk-test-fake-0123456789"


@dataclass(frozen=True)
class FakeCall:
    """One tool call the fake model makes."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    # Sent instead of json.dumps(arguments): malformed JSON, "" for a zero-argument call.
    raw: str | None = None
    # None: the server makes one up (call_fake_<request>_<n>); "" sends an empty id.
    id: str | None = None
    # Extra keys on the wire tool call, e.g. Gemini's {"extra_content": {...}}.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def wire_arguments(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.arguments)


def call(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    raw: str | None = None,
    id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> FakeCall:
    return FakeCall(name=name, arguments=arguments or {}, raw=raw, id=id, extra=extra or {})


@dataclass(frozen=True)
class Turn:
    """One reply of the fake model: a message, or an error, with the quirks to send it with."""

    text: str = ""
    tool_calls: tuple[FakeCall, ...] = ()
    reasoning_content: str = ""
    finish_reason: str | None = None  # default: "tool_calls" when there are calls, else "stop"
    usage: dict[str, Any] | None = None  # default: counted from the request, see cached_tokens
    cached_tokens: int = 0
    # An HTTP error (status >= 400) or a raw 200: body is JSON (dict/list) or text (str).
    status: int = 200
    body: Any = None
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the reply starts (past the client timeout = slow)
    # --- streaming quirks ---
    ids: str = "normal"  # normal | missing | empty | repeat | blank_continuation
    index: str = "normal"  # normal | missing | zero
    whole_calls: bool = False  # each call in one chunk: name and all arguments
    one_chunk: bool = False  # every call in one delta
    interleave: bool = False  # argument fragments of the calls alternate
    type_every_fragment: bool = False
    chunk_size: int = 12  # characters of arguments per fragment
    usage_in_choice: bool = False  # Moonshot: usage inside the last choice
    no_finish: bool = False  # the stream ends (with [DONE]) without a finish reason
    cut_after: int | None = None  # drop the connection after this many chunks
    reset: bool = False  # reset the connection (TCP RST) instead of answering
    error_after: int | None = None  # send stream_error after this many chunks
    pause_after: int | None = None  # after this many chunks, hold the rest ``pause`` seconds
    pause: float = 0.0
    bad_chunk: Any = None  # sent as the second chunk, as is (e.g. {"choices": 5})
    stream_error: dict[str, Any] | None = None
    ignore_stream: bool = False  # answer a streamed request with one whole chat.completion

    @property
    def is_error(self) -> bool:
        return self.status >= 400 or self.body is not None


def turn(
    text: str = "", *, tool_calls: list[FakeCall] | tuple[FakeCall, ...] = (), **quirks: Any
) -> Turn:
    """``turn(tool_calls=[call("search_voices", {"language": "th"})])`` or ``turn(text="Done")``."""
    return Turn(text=text, tool_calls=tuple(tool_calls), **quirks)


def error_turn(
    status: int, body: Any = None, *, headers: dict[str, str] | None = None, **quirks: Any
) -> Turn:
    """An HTTP error reply: ``error_turn(429, {"error": {...}}, headers={"Retry-After": "1"})``."""
    if body is None:
        body = {"error": {"message": f"fake error {status}", "type": "server_error"}}
    return Turn(status=status, body=body, headers=headers or {}, **quirks)


def raw_turn(text: str, *, status: int = 200, content_type: str = "application/json") -> Turn:
    """A reply whose body is exactly ``text`` (e.g. not JSON at all)."""
    return Turn(status=status, body=text, content_type=content_type)


def protocol_problems(messages: Any) -> list[str]:
    """How a request's messages break the chat protocol real providers enforce."""
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    problems: list[str] = []
    open_calls: dict[str, str] = {}
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system":
            if position != 0:
                problems.append(f"system message at position {position}: only first is allowed")
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"tool message {call_id!r} answers no open call")
            else:
                del open_calls[call_id]
        elif role in ("user", "assistant"):
            if open_calls:
                problems.append(
                    f"{role} message at position {position} while calls are unanswered: "
                    f"{sorted(open_calls)}"
                )
                open_calls = {}
            for wire_call in message.get("tool_calls") or []:
                call_id = wire_call.get("id")
                function = wire_call.get("function") or {}
                if not call_id:
                    problems.append(f"tool call without id at position {position}")
                try:
                    json.loads(function.get("arguments", ""))
                except (TypeError, ValueError):
                    problems.append(
                        f"tool call {call_id!r} replays arguments that are not JSON: "
                        f"{function.get('arguments')!r}"
                    )
                open_calls[call_id] = function.get("name", "")
        else:
            problems.append(f"unknown role {role!r} at position {position}")
    if open_calls:
        problems.append(f"request ends with unanswered calls: {sorted(open_calls)}")
    return problems


class FakeOpenAIServer(LoopbackServer):
    """Start with ``start()``; ``base_url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.requests: list[dict[str, Any]] = []  # every request body, in arrival order
        self.request_headers: list[dict[str, str]] = []
        self.problems: list[str] = []
        self.responder: Callable[[dict[str, Any]], Turn] | None = None
        self.latency = 0.0  # seconds added before every reply (load benchmarks)
        self.connections = 0  # TCP connections accepted (keep-alive reuses one)
        self.check_protocol = True
        self._script: deque[Turn] = deque()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified as each request arrives
        self._stopping = threading.Event()
        self._counter = itertools.count(1)
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # --- lifecycle -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reset(self) -> None:
        """Forget every turn, request and problem, as a new server would have none: a
        server shared by several tests is reset before each of them."""
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.request_headers.clear()
            self.problems.clear()
            self.responder = None
            self.latency = 0.0
            self.check_protocol = True

    # --- scripting -----------------------------------------------------------------

    def script(self, *turns: Turn) -> FakeOpenAIServer:
        """Queue replies, served in order, one per request."""
        with self._lock:
            self._script.extend(turns)
        return self

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        """Return once ``count`` requests have arrived (woken by each arrival)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(
                    f"{len(self.requests)} of {count} model requests after {timeout} s"
                )

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

    def provider_settings(self, api_key: str = TEST_API_KEY) -> dict[str, dict[str, str]]:
        """``settings.ADSTUDIO_PROVIDERS`` pointing openai, qwen and kimi at this server."""
        return {
            name: {"api_key": api_key, "base_url": self.base_url, "model": f"fake-{name}"}
            for name in ("openai", "qwen", "kimi")
        }

    def adapter(self, profile: str = "openai", **kwargs: Any) -> Any:
        """The real adapter with ``profile``'s quirks, pointed at this server."""
        from providers.openai_compat import OpenAICompatProvider
        from providers.profiles import PROFILES

        options = {"api_key": TEST_API_KEY, "base_url": self.base_url, "timeout": 5.0}
        options.update(kwargs)
        return OpenAICompatProvider(profile=PROFILES[profile], **options)

    # --- serving (called from handler threads) -------------------------------------

    def _next_turn(self, body: dict[str, Any]) -> Turn | None:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return None

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        with self._arrived:
            self.requests.append(body)
            self.request_headers.append(headers)
            self._arrived.notify_all()
            return len(self.requests)

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    fake: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (timeout, stream closed early) is normal here, not noise."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:  # once per connection, not per request
        super().setup()
        # Each SSE chunk is its own small write: without NODELAY, Nagle holds the next
        # one until the client acknowledges (up to 40 ms on a kept-alive connection).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.fake._lock:
            self.server.fake.connections += 1

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            fake._problem("request body is not JSON")
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid"}})
            return
        number = fake._record(body, {k.lower(): v for k, v in self.headers.items()})
        if fake.check_protocol:
            problems = protocol_problems(body.get("messages"))
            if problems:
                for problem in problems:
                    fake._problem(f"request {number}: {problem}")
                self._json(400, _error_body("protocol violation: " + "; ".join(problems)))
                return
        reply = fake._next_turn(body)
        if reply is None:
            fake._problem(f"request {number} was not scripted")
            self._json(400, _error_body("unscripted request"))
            return
        wait = fake.latency + reply.delay
        if wait and fake._stopping.wait(wait):
            return
        if reply.reset:
            self._reset()
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._reply(reply, body, number)  # unless the client gave up (timeout)

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the client reads "connection reset by peer"."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    # --- replies -------------------------------------------------------------------

    def _reply(self, reply: Turn, body: dict[str, Any], number: int) -> None:
        headers = {"x-request-id": f"req_fake_{number}", **reply.headers}
        if reply.is_error:
            if isinstance(reply.body, str):
                payload = reply.body.encode()
                content_type = reply.content_type or "text/plain"
            else:
                payload = json.dumps(reply.body).encode()
                content_type = reply.content_type or "application/json"
            self._send(reply.status, payload, content_type, headers)
            return
        calls = _numbered_calls(reply, number)
        if body.get("stream") and not reply.ignore_stream:
            self._stream(reply, body, calls, headers, number)
        else:
            self._json(200, _completion(reply, body, calls, number), headers)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers or {})

    def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str]):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _stream(
        self,
        reply: Turn,
        body: dict[str, Any],
        calls: list[tuple[str, FakeCall]],
        headers: dict[str, str],
        number: int,
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        # The events go out in one write: the same bytes as one write each, at a fraction
        # of the CPU (load benchmarks share the machine with this server).
        self._pending: list[bytes] = []
        for sent, chunk in enumerate(_chunks(reply, body, calls, number, include_usage)):
            if reply.cut_after is not None and sent >= reply.cut_after:
                self.close_connection = True
                self._flush_pending()
                self.connection.shutdown(socket.SHUT_RDWR)  # mid-body: no terminating chunk
                return
            if reply.error_after is not None and sent >= reply.error_after:
                error = reply.stream_error or {
                    "message": "upstream failure mid-stream",
                    "type": "server_error",
                    "code": "internal_error",
                }
                self._event({"error": error})
                self._end()
                return
            if reply.pause_after is not None and sent == reply.pause_after:
                self._flush_pending()  # what came before the pause reaches the client
                if self.server.fake._stopping.wait(reply.pause):
                    return
            if reply.bad_chunk is not None and sent == 1:
                self._event(reply.bad_chunk)
            self._event(chunk)
        self._write_chunk(b"data: [DONE]\n\n")
        self._end()

    def _event(self, payload: Any) -> None:
        self._write_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _write_chunk(self, data: bytes) -> None:
        self._pending.append(b"%x\r\n%s\r\n" % (len(data), data))

    def _end(self) -> None:
        self._pending.append(b"0\r\n\r\n")
        self._flush_pending()

    def _flush_pending(self) -> None:
        self.wfile.write(b"".join(self._pending))
        self.wfile.flush()
        self._pending.clear()


def _error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": "fake"}}


def _numbered_calls(reply: Turn, number: int) -> list[tuple[str, FakeCall]]:
    return [
        (fc.id if fc.id is not None else f"call_fake_{number}_{i}", fc)
        for i, fc in enumerate(reply.tool_calls)
    ]


def _usage(reply: Turn, body: dict[str, Any]) -> dict[str, Any]:
    if reply.usage is not None:
        return reply.usage
    prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
    completion = max(
        1, (len(reply.text) + sum(len(c.wire_arguments) for c in reply.tool_calls)) // 4
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
    }


def _finish(reply: Turn) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _wire_call(reply: Turn, call_id: str, fc: FakeCall, position: int) -> dict[str, Any]:
    """A whole call as a message or one-chunk delta carries it, with the id/index quirks."""
    wire: dict[str, Any] = {}
    if reply.index == "normal":
        wire["index"] = position
    elif reply.index == "zero":
        wire["index"] = 0
    if reply.ids != "missing":
        wire["id"] = "" if reply.ids == "empty" else call_id
    wire["type"] = "function"
    wire["function"] = {"name": fc.name, "arguments": fc.wire_arguments}
    wire.update(fc.extra)
    return wire


def _completion(
    reply: Turn, body: dict[str, Any], calls: list[tuple[str, FakeCall]], number: int
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = [
            _wire_call(replace(reply, index="missing"), cid, fc, i)
            for i, (cid, fc) in enumerate(calls)
        ]
    if reply.reasoning_content:
        message["reasoning_content"] = reply.reasoning_content
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": _finish(reply)}
    completion = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", ""),
        "choices": [choice],
    }
    if reply.usage_in_choice:
        choice["usage"] = _usage(reply, body)
    else:
        completion["usage"] = _usage(reply, body)
    return completion


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _fragments(reply: Turn, calls: list[tuple[str, FakeCall]]) -> list[list[dict[str, Any]]]:
    """Tool-call fragments per call, OpenAI style: header first, then argument pieces."""
    per_call = []
    for position, (call_id, fc) in enumerate(calls):
        index = {"normal": position, "zero": 0}.get(reply.index)
        frags = []
        header: dict[str, Any] = {} if index is None else {"index": index}
        if reply.ids != "missing":
            header["id"] = "" if reply.ids == "empty" else call_id
        header["type"] = "function"
        header["function"] = {"name": fc.name, "arguments": ""}
        header.update(fc.extra)
        frags.append(header)
        for piece in _pieces(fc.wire_arguments, reply.chunk_size):
            if not piece:
                continue
            frag: dict[str, Any] = {} if index is None else {"index": index}
            if reply.ids == "repeat":
                frag["id"] = call_id
            elif reply.ids in ("blank_continuation", "empty"):
                frag["id"] = ""
            if reply.type_every_fragment:
                frag["type"] = "function"
            frag["function"] = {"arguments": piece}
            frags.append(frag)
        per_call.append(frags)
    return per_call


def _chunks(
    reply: Turn,
    body: dict[str, Any],
    calls: list[tuple[str, FakeCall]],
    number: int,
    include_usage: bool,
) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": body.get("model", ""),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, **extra}
        return {**base, "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.reasoning_content, 16) if reply.reasoning_content else ():
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.text, 8) if reply.text else ():
        yield chunk({"content": piece})
    if calls:
        if reply.one_chunk:
            yield chunk(
                {"tool_calls": [_wire_call(reply, cid, fc, i) for i, (cid, fc) in enumerate(calls)]}
            )
        elif reply.whole_calls:
            for i, (cid, fc) in enumerate(calls):
                yield chunk({"tool_calls": [_wire_call(reply, cid, fc, i)]})
        else:
            per_call = _fragments(reply, calls)
            if reply.interleave:
                order = [f for group in itertools.zip_longest(*per_call) for f in group if f]
            else:
                order = [f for frags in per_call for f in frags]
            for fragment in order:
                yield chunk({"tool_calls": [fragment]})
    usage = _usage(reply, body)
    if not reply.no_finish:
        extra = {"usage": usage} if reply.usage_in_choice else {}
        yield chunk({}, _finish(reply), **extra)
    if include_usage and not reply.usage_in_choice:
        yield {**base, "choices": [], "usage": usage}
