"""The run rate limit (``ADSTUDIO_RUN_RATE``, per user): exact across web processes.

Every check is one atomic round trip to Redis (``CACHE_URL``): the ``limits`` library's
moving window, a Lua script that counts the user's requests of the last period and adds
this one only if it is within the limit. DRF's cache throttle reads, appends and writes
back a list, and parallel requests passed it. Without ``CACHE_URL`` (the embedded
default) the window is kept in process memory. While Redis cannot be reached, each
process limits on its own (a warning says so), as the cache does: an outage must turn
neither into 500s on chat nor into no limit at all.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import cache

from django.conf import settings
from limits import (
    RateLimitItem,
    RateLimitItemPerDay,
    RateLimitItemPerHour,
    RateLimitItemPerMinute,
    RateLimitItemPerSecond,
)
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import MovingWindowRateLimiter
from redis.exceptions import RedisError
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

_PERIODS = {
    "s": RateLimitItemPerSecond,
    "m": RateLimitItemPerMinute,
    "h": RateLimitItemPerHour,
    "d": RateLimitItemPerDay,
}
_SOCKET_TIMEOUT_S = 1.0  # as the cache's: a Redis that does not answer is given up on
_outage = threading.Event()


def rate_item(rate: str) -> RateLimitItem:
    """``30/minute`` (as ``adstudio.env.env_rate`` checked it) as a ``limits`` item."""
    count, _, period = rate.partition("/")
    return _PERIODS[period.strip()[0]](int(count))


@cache
def limiter(url: str) -> MovingWindowRateLimiter:
    """One limiter (and connection pool) per process and storage."""
    if not url:
        return MovingWindowRateLimiter(MemoryStorage())
    storage = RedisStorage(
        url,
        key_prefix="adstudio:rate",
        socket_timeout=_SOCKET_TIMEOUT_S,
        socket_connect_timeout=_SOCKET_TIMEOUT_S,
    )
    return MovingWindowRateLimiter(storage)


class RunRateThrottle(BaseThrottle):
    """Generate and chat: they start model runs, which cost money.

    A replay is not a new request: when the view says the request's idempotency key
    already started a run (its ``is_replay(request)``), it is answered with that run and
    neither counted nor refused here. It is still authenticated (before this) and
    authorised (by the view, after this) as any request is."""

    scope = "runs"

    def allow_request(self, request, view) -> bool:
        if not request.user.is_authenticated:  # refused before this by authentication
            return True
        is_replay = getattr(view, "is_replay", None)
        if is_replay is not None and is_replay(request):
            return True
        item = rate_item(settings.ADSTUDIO_RUN_RATE)
        identity = (self.scope, str(request.user.pk))
        try:
            allowed = self._hit(limiter(settings.CACHE_URL or ""), item, identity)
        except (RedisError, OSError) as exc:
            if not _outage.is_set():
                _outage.set()
                logger.warning(
                    "rate limit store unreachable (%s): each process limits runs on its own", exc
                )
            return self._hit(limiter(""), item, identity)
        if _outage.is_set():
            _outage.clear()
            logger.warning("rate limit store reachable again")
        return allowed

    def _hit(self, window: MovingWindowRateLimiter, item: RateLimitItem, identity) -> bool:
        allowed = window.hit(item, *identity)
        if not allowed:
            reset_at, _remaining = window.get_window_stats(item, *identity)
            self._wait = max(1.0, reset_at - time.time())
        return allowed

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)
