"""What both SDK adapters get from ``SDKAdapter``, checked once for each, through its real SDK
over HTTP: every failure becomes the same error of our hierarchy, and the key never shows."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from providers.base import (
    AuthenticationFailed,
    GenerateOptions,
    GenerateRequest,
    RateLimited,
    TransientError,
    UserMessage,
)
from testbed.fake_anthropic import ANTHROPIC_TEST_MODEL, claude_error, claude_turn
from testbed.fake_openai import error_turn, turn

# Not shaped like an "sk-" key, so only the adapter's own scrubbing can hide it.
KEY = "fake-key-5d1c9a7e3b42"


@dataclass(frozen=True)
class Side:
    """One adapter and its fake server, with what differs in scripting them."""

    key_env: str
    model: str
    server: Any
    make: Callable[..., Any]  # the adapter pointed at ``server``
    error: Callable[[int, str, str, dict[str, str]], Any]  # status, type, message, headers
    answer: Callable[..., Any]  # a scripted answer: (text, **quirks)

    def adapter(self, **options: Any) -> Any:
        return self.make(**{"api_key": KEY, **options})

    def ask(self, *, stream: bool = True) -> GenerateRequest:
        return GenerateRequest(
            model=self.model,
            system="You are the creative director.",
            messages=(UserMessage("Brief\nLanguage: en"),),
            options=GenerateOptions(stream=stream),
        )


def _openai_error(status: int, kind: str, message: str, headers: dict[str, str]) -> Any:
    return error_turn(status, {"error": {"message": message, "type": kind}}, headers=headers)


def _anthropic_error(status: int, kind: str, message: str, headers: dict[str, str]) -> Any:
    return claude_error(status, kind, message, headers=headers)


@pytest.fixture(params=["openai", "anthropic"])
def side(request: pytest.FixtureRequest) -> Side:
    if request.param == "openai":
        server = request.getfixturevalue("fake_openai")
        return Side(
            key_env="OPENAI_API_KEY",
            model="gpt-test",
            server=server,
            make=lambda **options: server.adapter("openai", **options),
            error=_openai_error,
            answer=turn,
        )
    server = request.getfixturevalue("fake_anthropic")
    server.api_key = KEY  # the fake refuses any other
    return Side(
        key_env="ANTHROPIC_API_KEY",
        model=ANTHROPIC_TEST_MODEL,
        server=server,
        make=server.adapter,
        error=_anthropic_error,
        answer=claude_turn,
    )


@contextlib.contextmanager
def raw_server(content_type: str, body: bytes, *, stall: float = 0.0) -> Iterator[str]:
    """A server that answers any POST with 200, ``content_type`` and ``body``, for replies
    the fakes cannot send; with ``stall``, it promises more body than it sends and holds
    the connection that long. Yields its base URL."""
    done = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body) + (1000 if stall else 0)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            done.wait(stall)
            self.close_connection = True

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        done.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_a_refused_key_names_the_variable_and_never_shows_the_key(side):
    # Some providers quote the key back in their 401.
    side.server.script(side.error(401, "authentication_error", f"invalid key: {KEY}", {}))

    with pytest.raises(AuthenticationFailed) as caught:
        side.adapter().generate(side.ask())

    error = caught.value
    assert side.key_env in str(error) and error.status == 401
    assert KEY not in str(error) and KEY not in repr(error)
    assert error.__cause__ is None and error.__suppress_context__  # no SDK traceback


def test_the_repr_never_shows_the_key(side):
    adapter = side.adapter()

    assert KEY not in repr(adapter)
    assert side.server.base_url in repr(adapter)


def test_a_429_with_retry_after_is_rate_limited_and_not_retried_by_the_sdk(side):
    side.server.script(
        side.error(429, "rate_limit_error", "Rate limit reached", {"Retry-After": "7"})
    )

    with pytest.raises(RateLimited) as caught:
        side.adapter().generate(side.ask())

    assert caught.value.retry_after == 7.0
    assert caught.value.request_id == "req_fake_1"
    assert len(side.server.requests) == 1  # max_retries=0: our policy is the only one


def test_a_500_is_transient(side):
    side.server.script(side.error(500, "api_error", "Internal server error", {}))

    with pytest.raises(TransientError, match="HTTP 500") as caught:
        side.adapter().generate(side.ask())

    assert caught.value.status == 500
    assert len(side.server.requests) == 1


def test_a_slow_response_times_out_as_transient(side):
    side.server.script(side.answer("too late", delay=3.0))
    adapter = side.adapter(timeout=0.3)
    started = time.monotonic()

    with pytest.raises(TransientError, match=r"no response within 0\.3s"):
        adapter.generate(side.ask())

    assert time.monotonic() - started < 2.0


def test_a_stream_that_stalls_times_out_as_transient(side):
    """A timeout while reading a body the SDK has handed over says the same as one while
    waiting for the response."""
    with raw_server("text/event-stream", b": keep-alive\n\n", stall=3.0) as base_url:
        adapter = side.adapter(base_url=base_url, timeout=0.3)
        started = time.monotonic()

        with pytest.raises(TransientError, match=r"no response within 0\.3s"):
            adapter.generate(side.ask(stream=True))

        assert time.monotonic() - started < 2.0


def test_connection_refused_is_transient(side):
    adapter = side.adapter(base_url="http://127.0.0.1:9")

    with pytest.raises(TransientError, match="connection failed"):
        adapter.generate(side.ask())


@pytest.mark.parametrize(
    ("content_type", "body", "stream"),
    [
        ("text/html", b"<html>upstream unavailable</html>", False),
        ("application/json", b"{not json", False),
        ("text/plain", b"this is not an event stream", True),
    ],
    ids=["html body", "broken json body", "plain text instead of a stream"],
)
def test_a_body_that_is_not_json_is_transient(side, content_type, body, stream):
    with raw_server(content_type, body) as base_url:
        adapter = side.adapter(base_url=base_url)

        with pytest.raises(TransientError):
            adapter.generate(side.ask(stream=stream))


def test_any_other_sdk_error_is_transient_and_never_shows_the_key(side, monkeypatch):
    adapter = side.adapter()

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise adapter.sdk.error(f"the client could not send with {KEY}")

    monkeypatch.setattr(adapter, "_post", fail)

    with pytest.raises(TransientError, match="SDK error") as caught:
        adapter.generate(side.ask())

    assert KEY not in str(caught.value)
