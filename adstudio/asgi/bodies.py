"""Request bodies under ASGI: bounded in size and in time.

Django's ASGI handler reads a whole body, to a temporary file, before any view runs,
however large it is and however slowly it comes: a client sending gigabytes, or a byte a
minute, would keep its connection and the disk busy for as long as it liked. This wrapper
reads the body first, in the event loop, and refuses one longer than the largest any
endpoint takes with 413 (as ``adstudio.chunked`` does under WSGI) and one not complete
within ``timeout`` seconds of the request's start with 408; the application is then not
called at all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

Scope = dict
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


class BoundedBodies:
    def __init__(
        self,
        app: Callable,
        *,
        max_bytes: Callable[[], int],
        timeout: Callable[[], float],
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes  # read per request: settings may change in tests
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The whole body is read here, in the event loop, before the application is
        called: a thread of the application's is never held by a slow client."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes()
        chunks: list[bytes] = []
        received = 0
        answered = False
        try:
            async with asyncio.timeout(self.timeout()):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return  # the client left: nothing to serve
                    chunks.append(message.get("body", b""))
                    received += len(chunks[-1])
                    if received > limit:
                        # The rest is read and dropped first (up to a bound), so that a
                        # client still sending reads the answer rather than a broken pipe.
                        whole = await _drain(receive, message, more=DRAIN_FACTOR * limit)
                        detail = f"Request body is larger than {limit} bytes."
                        answered = True
                        await _refuse(send, 413, "payload_too_large", detail, close=not whole)
                        return
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            if not answered:
                await _refuse(send, 408, "request_timeout", "The request body came too slowly.")
            return
        body = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return body
            return await receive()  # after the body: the wait for a disconnect

        await self.app(scope, replay, send)


DRAIN_FACTOR = 8  # a refused body is read on for at most this many times the limit


async def _drain(receive: Receive, message: dict, *, more: int) -> bool:
    """Read the body on, dropping it, for at most ``more`` bytes: whether it ended."""
    while message.get("more_body", False):
        if more <= 0:
            return False
        message = await receive()
        if message["type"] != "http.request":
            return False
        more -= len(message.get("body", b""))
    return True


async def _refuse(send: Send, status: int, code: str, message: str, *, close: bool = True) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))  # the rest of the body is not read
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
