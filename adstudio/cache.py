"""The shared cache (``CACHE_URL``, on Redis), kept out of the way of requests when Redis
is not: while it cannot be reached, each process answers from a memory cache of its own.

Everything this project caches can be lost: API throttle counts (which then count per
process for the outage: a local limit, not none) and voice facets (computed again).
Failing instead would turn a cache outage into 500s on generate and chat, and lose the
user's message with them.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
# A Redis that does not answer is given up on quickly: a request must not hang on it.
SOCKET_TIMEOUT_S = 1.0


def _or_local(name: str) -> Callable[..., Any]:
    def method(self: FallbackRedisCache, *args: Any, **kwargs: Any) -> Any:
        try:
            result = getattr(RedisCache, name)(self, *args, **kwargs)
        except _UNREACHABLE as exc:
            self._outage(exc)
            return getattr(self._local, name)(*args, **kwargs)
        self._recovered()
        return result

    return functools.update_wrapper(method, getattr(RedisCache, name))


class FallbackRedisCache(RedisCache):
    """Django's Redis cache; while Redis is unreachable, a per-process memory cache with
    a warning logged (once per outage, and once when Redis is back)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = params.setdefault("OPTIONS", {})
        options.setdefault("socket_connect_timeout", SOCKET_TIMEOUT_S)
        options.setdefault("socket_timeout", SOCKET_TIMEOUT_S)
        super().__init__(server, params)
        self._local = LocMemCache("adstudio-cache-fallback", {"TIMEOUT": self.default_timeout})
        self._down = False
        self._state = threading.Lock()

    def _outage(self, exc: BaseException) -> None:
        with self._state:
            if self._down:
                return
            self._down = True
        logger.warning(
            "cache unreachable (%s): each process caches and throttles on its own until it is back",
            exc,
        )

    def _recovered(self) -> None:
        if not self._down:
            return
        with self._state:
            if not self._down:
                return
            self._down = False
        logger.warning("cache reachable again")

    get = _or_local("get")
    set = _or_local("set")
    add = _or_local("add")
    touch = _or_local("touch")
    delete = _or_local("delete")
    get_many = _or_local("get_many")
    set_many = _or_local("set_many")
    delete_many = _or_local("delete_many")
    has_key = _or_local("has_key")
    incr = _or_local("incr")
    clear = _or_local("clear")
