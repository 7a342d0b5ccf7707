"""Slow clients against the production web server (gunicorn with uvicorn's workers): a
hundred half-sent requests hold no worker, so probes and the API answer meanwhile, and a
body that does not arrive in time is refused with 408."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from accounts.services import token_create
from tests.support.web import WebServer
from tests.support.worker import database_url

HALF_SENT = 100


def half_sent(port: int, request: bytes) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection.sendall(request)
    return connection


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_half_sent_requests_leave_the_server_answering(user, tmp_path):
    token = token_create(user=user)[1]
    web = WebServer(
        env={"DATABASE_URL": database_url(), "DEBUG": "0", "ADSTUDIO_BODY_READ_TIMEOUT": "2"},
        log=tmp_path / "web.log",
        asgi=True,
    ).start(ready_path="/healthz")
    body = json.dumps(
        {"clientDescription": "Spotify Premium family plan", "language": "th"}
    ).encode()
    held = []
    try:
        # Headers that never end, and a body that stops half-way (as slowloris sends them).
        held += [
            half_sent(web.port, b"GET /api/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: b\r\n")
            for _ in range(HALF_SENT // 2)
        ]
        slow_body = (
            b"POST /api/ads/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Token " + token.encode() + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:10]
        )
        started = time.monotonic()
        held += [half_sent(web.port, slow_body) for _ in range(HALF_SENT // 2)]

        with httpx.Client(base_url=web.base, timeout=10) as client:
            for _ in range(10):
                assert client.get("/healthz").status_code == 200
                assert client.get("/readyz").status_code == 200
            created = client.post(
                "/api/ads/", json=json.loads(body), headers={"Authorization": f"Token {token}"}
            )
            assert created.status_code == 201, created.text

        # Each stalled body is refused once its time is up, and its connection closed.
        answer = b""
        while chunk := held[-1].recv(4096):  # the answer, to the connection's close
            answer += chunk
        waited = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b'"request_timeout"' in answer
        assert 1.5 < waited < 8, waited
    finally:
        for connection in held:
            connection.close()
        web.stop()
