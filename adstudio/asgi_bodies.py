"""Request bodies under ASGI: bounded in size and in time.

Django's ASGI handler reads a whole body, to a temporary file, before any view runs,
however large it is and however slowly it comes: a client sending gigabytes, or a byte a
minute, would keep its connection and the disk busy for as long as it liked. This wrapper
refuses a body longer than the largest any endpoint takes with 413 (as ``adstudio.chunked``
does under WSGI) and one not complete within ``timeout`` seconds of the request's start
with 408; Django is then told the client left, and serves nothing.
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
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes()
        deadline = asyncio.get_running_loop().time() + self.timeout()
        received = 0
        complete = False

        async def bounded_receive() -> dict:
            nonlocal received, complete
            if complete:  # the body is in: what follows is the wait for a disconnect
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                await _refuse(send, 408, "request_timeout", "The request body came too slowly.")
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    await _refuse(
                        send,
                        413,
                        "payload_too_large",
                        f"Request body is larger than {limit} bytes.",
                    )
                    return {"type": "http.disconnect"}
                complete = not message.get("more_body", False)
            return message

        await self.app(scope, bounded_receive, send)


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),  # the rest of the body is not read
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
