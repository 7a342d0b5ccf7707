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
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.urls import Resolver404, resolve


class ByView:
    def __init__(self, *, waiting: Callable, computing: Callable) -> None:
        self.waiting = waiting
        self.computing = computing

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            path = scope["path"][len(scope.get("root_path", "")) :]
            if waits_in_event_loop(path):
                await self.waiting(scope, receive, send)
                return
        await self.computing(scope, receive, send)  # and the lifespan messages


@functools.lru_cache(maxsize=4096)
def waits_in_event_loop(path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    view_class = getattr(match.func, "view_class", None)
    return bool(getattr(view_class, "waits_in_event_loop", False))
