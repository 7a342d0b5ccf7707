"""What the ASGI application answers before Django sees a request: the probes, in the event
loop, and bodies too large or too slow, refused."""

from __future__ import annotations

import asyncio
import json

import pytest

from adstudio.asgi.bodies import BoundedBodies
from adstudio.asgi.health import HealthCheckApp


def http_scope(path: str, method: str = "GET") -> dict:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def call(app, scope: dict, messages: list[dict] | None = None, *, pause: float = 0) -> list[dict]:
    """``app`` served ``scope``; ``messages`` arrive as the request's body, each after
    ``pause`` seconds (taken from the list, which shows what was left unread). The
    messages the app sent."""
    incoming = messages if messages is not None else [{"type": "http.request", "body": b""}]
    sent: list[dict] = []

    async def receive() -> dict:
        if incoming:
            await asyncio.sleep(pause)
            return incoming.pop(0)
        await asyncio.sleep(3600)  # the client stays; nothing more comes
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


async def django_must_not_run(scope, receive, send):
    raise AssertionError(f"{scope['path']} reached the application")


def test_healthz_is_answered_ahead_of_the_application():
    start, body = call(HealthCheckApp(django_must_not_run), http_scope("/healthz"))
    assert start["status"] == 200
    assert json.loads(body["body"]) == {"status": "ok"}
    assert (b"cache-control", b"no-store") in start["headers"]


def test_a_probe_answers_head_without_a_body_and_refuses_other_methods():
    app = HealthCheckApp(django_must_not_run)
    start, body = call(app, http_scope("/healthz", "HEAD"))
    assert (start["status"], body["body"]) == (200, b"")
    start, body = call(app, http_scope("/readyz", "POST"))
    assert start["status"] == 405
    assert (b"allow", b"GET, HEAD") in start["headers"]


@pytest.mark.django_db
def test_readyz_runs_its_checks_ahead_of_the_application():
    start, body = call(HealthCheckApp(django_must_not_run), http_scope("/readyz"))
    assert start["status"] == 200, body
    assert json.loads(body["body"])["checks"] == {"database": "ok", "broker": "ok"}


def test_other_paths_go_to_the_application():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    start, _ = call(HealthCheckApp(app), http_scope("/healthz/more"))
    assert start["status"] == 204


class BodyReader:
    """An application that reads the body as Django's handler does; ``got`` is what it
    read, or ``"disconnect"``, ``None`` when it was not called."""

    def __init__(self) -> None:
        self.got: bytes | str | None = None

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.got = "disconnect"
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.got = body
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def bounded(app, *, max_bytes: int = 100, timeout: float = 5.0) -> BoundedBodies:
    return BoundedBodies(app, max_bytes=lambda: max_bytes, timeout=lambda: timeout)


def test_a_body_within_the_limits_reaches_the_application_whole_and_at_once():
    received = []

    async def app(scope, receive, send):
        received.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    parts = [
        {"type": "http.request", "body": b"x" * 60, "more_body": True},
        {"type": "http.request", "body": b"y" * 40},
    ]
    start, _ = call(bounded(app), http_scope("/api/ads/", "POST"), parts, pause=0.01)
    assert start["status"] == 200
    # Read in the event loop before the application ran: one message, the whole body.
    assert received == [{"type": "http.request", "body": b"x" * 60 + b"y" * 40, "more_body": False}]


def test_a_body_past_the_size_limit_is_refused_as_it_arrives_and_the_rest_read_out():
    reader = BodyReader()
    parts = [{"type": "http.request", "body": b"x" * 80, "more_body": True}] * 5
    parts.append({"type": "http.request", "body": b"x"})
    incoming = list(parts)
    start, body = call(bounded(reader), http_scope("/api/ads/", "POST"), incoming)
    assert start["status"] == 413
    assert json.loads(body["body"])["error"]["code"] == "payload_too_large"
    assert reader.got is None  # the application is not called
    assert not incoming  # read to its end: a client still sending gets the answer


def test_a_refused_body_is_read_out_only_so_far():
    parts = [{"type": "http.request", "body": b"x" * 80, "more_body": True}] * 50
    incoming = list(parts)
    start, _ = call(bounded(BodyReader(), max_bytes=100), http_scope("/", "POST"), incoming)
    assert start["status"] == 413
    # 100 bytes and 8 times that more, at most: 12 parts of 80; the rest is left unread.
    assert len(parts) - len(incoming) == 12


def test_a_body_that_comes_too_slowly_is_refused_with_408():
    reader = BodyReader()
    parts = [{"type": "http.request", "body": b"x", "more_body": True}] * 50
    start, body = call(
        bounded(reader, timeout=0.3), http_scope("/api/ads/", "POST"), parts, pause=0.05
    )
    assert start["status"] == 408
    assert json.loads(body["body"])["error"]["code"] == "request_timeout"
    assert reader.got is None


def test_the_time_limit_is_the_bodys_not_the_responses():
    """Once the body is in, the application's wait for a disconnect (Django listens for
    one while a response streams) has no deadline."""

    async def streams_past_the_deadline(scope, receive, send):
        await receive()  # the body
        listening = asyncio.ensure_future(receive())  # as Django's handler does
        await asyncio.sleep(0.5)
        assert not listening.done()  # no made-up disconnect at the deadline
        listening.cancel()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    start, _ = call(bounded(streams_past_the_deadline, timeout=0.1), http_scope("/api/"))
    assert start["status"] == 200


RUN = "7b0d3f4e-1c9a-4f7e-9a51-2d4c8f0e6b11"


@pytest.mark.parametrize(
    ("path", "waits"),
    [
        (f"/api/runs/{RUN}/events", True),
        (f"/api/runs/{RUN}/events/stream", True),
        (f"/api/ads/{RUN}/ui-chat", True),
        (f"/api/ads/{RUN}/ui-chat/chat-1/stream", True),
        (f"/api/ads/{RUN}/chat", False),
        (f"/api/runs/{RUN}", False),
        ("/api/ads/", False),
        ("/admin/login/", False),
        ("/no/such/page", False),
    ],
)
def test_only_requests_that_follow_a_run_wait_in_the_event_loop(path, waits):
    from adstudio.asgi.routing import waits_in_event_loop

    assert waits_in_event_loop(path) is waits


def test_only_so_many_waiting_requests_compute_at_once_until_their_response_starts():
    """Streams opened at once compute (their views) ``openings`` at a time; one whose
    response has started streams on without its turn, and the next begins."""
    from adstudio.asgi.routing import ByView

    computing_now, most = 0, 0
    answer = asyncio.Event()  # the views answer when the test says
    streamed = asyncio.Event()

    async def waiting(scope, receive, send):
        nonlocal computing_now, most
        computing_now += 1
        most = max(most, computing_now)
        await answer.wait()
        computing_now -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await streamed.wait()  # the stream's body, long after its turn ended
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def computing(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def main() -> None:
        app = ByView(waiting=waiting, computing=computing, openings=2)
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        def request(path: str):
            scope = {"type": "http", "path": path, "root_path": ""}
            return asyncio.create_task(app(scope, lambda: None, send))

        streams = [request(f"/api/runs/{RUN}/events/stream") for _ in range(5)]
        await asyncio.sleep(0.05)
        assert (computing_now, most) == (2, 2)  # three wait their turn
        await asyncio.wait_for(request(f"/api/runs/{RUN}"), 1)  # a computing one: no wait
        answer.set()  # each view answers as its turn comes: all five start
        for _ in range(50):
            await asyncio.sleep(0.01)
            if sum(m["type"] == "http.response.start" for m in sent) == 6:
                break
        assert sum(m["type"] == "http.response.start" for m in sent) == 6
        assert most == 2 and not any(task.done() for task in streams)  # still streaming
        streamed.set()
        await asyncio.gather(*streams)

    asyncio.run(main())
