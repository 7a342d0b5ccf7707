"""Which requests Django's ASGI handler serves, and which its WSGI handler in threads.

A request that follows a run (an event stream, a ``?wait=`` long poll, a ui-chat stream or
its resume) waits for minutes without computing: Django's ASGI handler lets it wait in the
event loop, holding no thread. Every other request computes from its start to its end,
and Django's WSGI handler does that for less: measured in one process, 4.1 against
5.5-6.1 ms of CPU for the same API request, the difference being the ASGI handler's
adapters around synchronous middleware and views (docs/BENCHMARKS.md). So one process
serves both: a view says it waits on the loop (``waits_in_event_loop = True`` on its
class) and its requests go to the ASGI handler; the others to the WSGI handler, run in a
fixed pool of threads as gunicorn's threaded workers did.

A waiting request still computes until its view has answered (authentication, the run's
look-up, the stream's slot), in a thread of its own that Django's ASGI handler starts for
it. So that a thousand streams opened at once (clients reconnecting to a restarted host)
do not start a thousand threads contending for the interpreter and the database pool,
with requests refused when none of them gets a connection within
``ADSTUDIO_DB_POOL_TIMEOUT``, only ``openings`` of them compute at once; the others wait
their turn in the event loop, holding nothing. A request's turn ends when its response
starts: what it streams afterwards waits without a thread.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from django.urls import Resolver404, resolve


class ByView:
    def __init__(self, *, waiting: Callable, computing: Callable, openings: int) -> None:
        self.waiting = waiting
        self.computing = computing
        self.openings = asyncio.Semaphore(openings)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            path = scope["path"][len(scope.get("root_path", "")) :]
            if waits_in_event_loop(path):
                await self._wait(scope, receive, send)
                return
        await self.computing(scope, receive, send)  # and the lifespan messages

    async def _wait(self, scope: dict, receive: Callable, send: Callable) -> None:
        await self.openings.acquire()
        opening = True

        def opened() -> None:
            nonlocal opening
            if opening:
                opening = False
                self.openings.release()

        async def send_once_opened(message: dict) -> None:
            if message["type"] == "http.response.start":
                opened()
            await send(message)

        try:
            await self.waiting(scope, receive, send_once_opened)
        finally:
            opened()


@functools.lru_cache(maxsize=4096)
def waits_in_event_loop(path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    view_class = getattr(match.func, "view_class", None)
    return bool(getattr(view_class, "waits_in_event_loop", False))
