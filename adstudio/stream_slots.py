"""How many streams (Server-Sent Events, long polls, ui-chat streams) a user has open,
across web processes: at most ``ADSTUDIO_MAX_STREAMS_PER_USER``, so one client cannot hold
every web thread. Past it a new stream is refused with 429 and ``Retry-After``.

A slot lives in ``CACHE_URL``'s Redis as a member of the user's sorted set, scored by
when it lapses: a stream renews it as it goes (adding it again if Redis lost it in a
restart, and keeping the set alive), and gives it back when it ends, so a process that
dies without giving its slots back frees them within ``SLOT_TTL_S``. Taking
a slot is one Lua script (lapsed slots dropped, the rest counted, this one added only
under the cap), so parallel requests cannot all pass. Without ``CACHE_URL``, or while
its Redis is unreachable, each process counts its own.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import suppress
from functools import cache

import redis
from django.conf import settings
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

SLOT_TTL_S = 30.0  # a stream renews its slot at least this often (it wakes every 5 s)
RETRY_AFTER_S = 5
_SOCKET_TIMEOUT_S = 1.0

_TAKE = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000))
return 1
"""
# A slot renewed: added again if it is gone (Redis restarted empty), and the user's set
# kept as long as its latest slot, so open streams keep counting however long they last.
_RENEW = """
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 1000))
return 1
"""


class _LocalSlots:
    """One process's own count, while there is no shared one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, dict[str, float]] = {}

    def take(self, user: str, slot: str, cap: int) -> bool:
        now = time.monotonic()
        with self._lock:
            held = {s: t for s, t in self._slots.get(user, {}).items() if t > now}
            if len(held) >= cap:
                self._slots[user] = held
                return False
            held[slot] = now + SLOT_TTL_S
            self._slots[user] = held
            return True

    def renew(self, user: str, slot: str) -> None:
        with self._lock:
            if slot in self._slots.get(user, {}):
                self._slots[user][slot] = time.monotonic() + SLOT_TTL_S

    def give_back(self, user: str, slot: str) -> None:
        with self._lock:
            self._slots.get(user, {}).pop(slot, None)


_local = _LocalSlots()


@cache
def _shared(url: str) -> tuple[redis.Redis, object, object]:
    client = redis.Redis.from_url(
        url, socket_timeout=_SOCKET_TIMEOUT_S, socket_connect_timeout=_SOCKET_TIMEOUT_S
    )
    return client, client.register_script(_TAKE), client.register_script(_RENEW)


def _key(user: str) -> str:
    return f"adstudio:streams:{user}"


class StreamSlot:
    """One open stream's slot: ``renew()`` it while the stream goes on, ``give_back()``
    when it ends (both safe to call more than once)."""

    def __init__(self, user: str, slot: str, url: str, shared: bool) -> None:
        self.user, self.slot, self.url, self.shared = user, slot, url, shared
        self.given_back = False

    def renew(self) -> None:
        if self.given_back:
            return
        if not self.shared:
            _local.renew(self.user, self.slot)
            return
        _client, _take, renew = _shared(self.url)
        # Unreachable: the slot lapses, and is added again at the next renewal that gets
        # through (a script's SHA is sent again by redis-py after a restart).
        with suppress(RedisError, OSError):
            renew(keys=[_key(self.user)], args=[time.time(), SLOT_TTL_S, self.slot])

    def give_back(self) -> None:
        if self.given_back:
            return
        self.given_back = True
        if not self.shared:
            _local.give_back(self.user, self.slot)
            return
        client, _take, _renew = _shared(self.url)
        with suppress(RedisError, OSError):  # unreachable: it lapses within SLOT_TTL_S
            client.zrem(_key(self.user), self.slot)


def stream_slot(user_id: object) -> StreamSlot | None:
    """A slot for one more stream of this user, or None when they have as many open as
    ``ADSTUDIO_MAX_STREAMS_PER_USER`` allows."""
    user, slot = str(user_id), uuid.uuid4().hex
    cap = settings.ADSTUDIO_MAX_STREAMS_PER_USER
    url = settings.CACHE_URL or ""
    if url:
        _client, take, _renew = _shared(url)
        try:
            taken = take(keys=[_key(user)], args=[time.time(), cap, SLOT_TTL_S, slot])
            return StreamSlot(user, slot, url, shared=True) if taken else None
        except (RedisError, OSError) as exc:
            logger.warning("stream slots unreachable (%s): this process counts its own", exc)
    if _local.take(user, slot, cap):
        return StreamSlot(user, slot, url, shared=False)
    return None


def take_stream_slot(user) -> StreamSlot:
    """A slot for one more stream of ``user``, or the API's 429 with ``Retry-After``."""
    from rest_framework.exceptions import Throttled

    slot = stream_slot(user.pk)
    if slot is None:
        cap = settings.ADSTUDIO_MAX_STREAMS_PER_USER
        raise Throttled(
            wait=RETRY_AFTER_S,
            detail=f"You have {cap} streams open, as many as one user may: close one, or "
            f"retry in {RETRY_AFTER_S} s.",
            code="too_many_streams",
        )
    return slot


class HeldStream:
    """A streaming response's body that holds its stream's slot: renewed as it goes,
    given back when the response is closed, whether its body was read or not."""

    def __init__(self, chunks, slot: StreamSlot) -> None:
        self._chunks = chunks
        self._slot = slot
        self._renewed = time.monotonic()

    def __iter__(self):
        for chunk in self._chunks:
            if time.monotonic() - self._renewed > SLOT_TTL_S / 3:
                self._slot.renew()
                self._renewed = time.monotonic()
            yield chunk

    def close(self) -> None:
        self._slot.give_back()
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def release_request_thread() -> None:
    """Let the thread of the current ASGI request go. Django runs a request's sync code
    (middleware, DRF views) in a thread of the request's own, which asgiref keeps until
    the response has been sent: a stream open for minutes would keep an idle thread (its
    stack, a share of the scheduler) for nothing. A later sync call of the request gets a
    new thread, given up when the response ends as before."""
    from asgiref.sync import SyncToAsync

    # asgiref's own bookkeeping (3.x): were it to change, the thread is kept, as before.
    contexts = getattr(SyncToAsync, "thread_sensitive_context", None)
    executors = getattr(SyncToAsync, "context_to_thread_executor", None)
    context = contexts.get(None) if contexts is not None else None
    executor = executors.pop(context, None) if context is not None and executors else None
    if executor is not None:
        executor.shutdown(wait=False)


class AsyncHeldStream:
    """``HeldStream`` for an asynchronous body (served under ASGI): it holds no thread of
    its request's while it waits, and its slot's renewals borrow one for their round
    trip."""

    def __init__(self, chunks, slot: StreamSlot) -> None:
        self._chunks = chunks
        self._slot = slot
        self._renewed = time.monotonic()

    async def __aiter__(self):
        from asgiref.sync import sync_to_async

        release_request_thread()
        async for chunk in self._chunks:
            if time.monotonic() - self._renewed > SLOT_TTL_S / 3:
                await sync_to_async(self._slot.renew, thread_sensitive=False)()
                self._renewed = time.monotonic()
            yield chunk

    def close(self) -> None:
        self._slot.give_back()
