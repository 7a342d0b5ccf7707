"""Waking the web threads that wait on a run (long polls, SSE, ``?wait=``) when the run's
events are committed, rather than each re-reading the database every fraction of a second.

A trigger on the event table notifies the channel ``adstudio_run_events`` with the run's
id; PostgreSQL delivers it at commit, so a notified waiter always finds the rows. Each
process has one listening connection, read by one daemon thread, which wakes the threads
waiting on that run. A wake-up only says "read again": a waiter always reads the
database itself, and still reads every few seconds without one, so a lost notification
(the listener reconnecting after a database restart) costs latency, never an event.
Without PostgreSQL, or while the listener is not connected, waiters poll every 0.2 s:
reads in proportion to the clients waiting, whether anything happens or not.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress

from django.db import DatabaseError, InterfaceError, connections

logger = logging.getLogger(__name__)

CHANNEL = "adstudio_run_events"
# What someone may read changed (workspaces/migrations/0003_access_change_notify): the
# payload is a user id, or "*" for everyone.
ACCESS_CHANNEL = "adstudio_access"
POLL_WITHOUT_LISTENER_S = 0.2  # no notifications: read this often
POLL_WITH_LISTENER_S = 2.0  # notifications: read this often all the same, in case one was lost
# A coroutine's stream (ASGI) reads less often: a process follows thousands of them, and
# while the listener is connected a notification is not lost (when it drops, every waiter
# is woken and polls at POLL_WITHOUT_LISTENER_S until it is back).
ASYNC_POLL_WITH_LISTENER_S = 15.0
RECONNECT_MAX_S = 30.0
LISTEN_WAIT_S = 1.0  # the listener looks whether it is told to stop at least this often
APPLICATION_NAME = "adstudio run wake-ups"


class LoopWaker:
    """A waiter of a coroutine (a stream served under ASGI): set from the listener's
    thread, awaited in the event loop, holding no thread while it waits."""

    __slots__ = ("event", "loop")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def set(self) -> None:
        self.loop.call_soon_threadsafe(self.event.set)


class RunWakeups:
    """The waiting threads and coroutines of one process, by run id, and the thread that
    wakes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[threading.Event | LoopWaker]] = {}
        self._listener_pid: int | None = None  # a forked child starts its own listener
        self._listener: threading.Thread | None = None
        self._stopping = threading.Event()
        self.listening = threading.Event()  # set while notifications are being received
        # Wake-ups so far, of each run waited on and of all at once: equal counts mean
        # nothing was committed since (``generation``).
        self._woken: dict[str, int] = {}
        self._all_woken = 0
        # Access changes so far, per user and for everyone (and each listener restart,
        # which may have lost one): a stream re-checks its reader's access when the count
        # it saw moves (``access_generation``), and only then.
        self._access_changed: dict[str, int] = {}
        self._all_access_changed = 0

    @contextmanager
    def waiter(self, run_id) -> Iterator[threading.Event]:
        """An event set whenever ``run_id`` has new events, for the ``with`` block."""
        self._start_listener()
        key = str(run_id)
        event = threading.Event()
        with self._lock:
            self._waiters.setdefault(key, set()).add(event)
        try:
            yield event
        finally:
            with self._lock:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(event)
                    if not waiting:
                        del self._waiters[key]
                        self._woken.pop(key, None)

    @asynccontextmanager
    async def async_waiter(self, run_id) -> AsyncIterator[LoopWaker]:
        """``waiter`` for a coroutine."""
        self._start_listener()
        key = str(run_id)
        waker = LoopWaker()
        with self._lock:
            self._waiters.setdefault(key, set()).add(waker)
        try:
            yield waker
        finally:
            with self._lock:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(waker)
                    if not waiting:
                        del self._waiters[key]
                        self._woken.pop(key, None)

    async def async_wait(self, waker: LoopWaker, timeout: float) -> None:
        """``wait`` for a coroutine: no thread is held while it waits."""
        interval = (
            ASYNC_POLL_WITH_LISTENER_S if self.listening.is_set() else POLL_WITHOUT_LISTENER_S
        )
        with suppress(TimeoutError):
            await asyncio.wait_for(waker.event.wait(), max(0.0, min(timeout, interval)))
        waker.event.clear()

    def wait(self, event: threading.Event, timeout: float) -> None:
        """Wait until ``event`` is set or ``timeout`` seconds pass, at most one polling
        interval; then clear it, before the caller reads the database again."""
        interval = POLL_WITH_LISTENER_S if self.listening.is_set() else POLL_WITHOUT_LISTENER_S
        event.wait(max(0.0, min(timeout, interval)))
        event.clear()

    def generation(self, run_id) -> tuple[int, int]:
        """Changes whenever ``run_id``'s waiters are woken: two reads of its events made
        under the same generation, while the listener is connected, read the same rows."""
        with self._lock:
            return self._all_woken, self._woken.get(str(run_id), 0)

    def access_generation(self, user_id) -> tuple[int, int]:
        """Changes whenever ``user_id``'s access may have shrunk (or may have, unheard):
        a dictionary read, so every wake-up of every stream can look."""
        with self._lock:
            return self._all_access_changed, self._access_changed.get(str(user_id), 0)

    def access_changed(self, user_id: str) -> None:
        """``user_id`` ("*": everyone) may read less now: every waiter wakes and those of
        that reader re-check (rare: a membership removed, an account deactivated)."""
        with self._lock:
            if user_id == "*":
                self._all_access_changed += 1
            else:
                self._access_changed[user_id] = self._access_changed.get(user_id, 0) + 1
        self._wake_all()

    def wake(self, run_id) -> None:
        key = str(run_id)
        with self._lock:
            events = list(self._waiters.get(key, ()))
            if events:
                self._woken[key] = self._woken.get(key, 0) + 1
        for event in events:
            event.set()

    def _wake_all(self) -> None:
        with self._lock:
            events = [event for waiting in self._waiters.values() for event in waiting]
            self._all_woken += 1
        for event in events:
            event.set()

    def _start_listener(self) -> None:
        if self._listener_pid == os.getpid() or connections["default"].vendor != "postgresql":
            return
        with self._lock:
            if self._listener_pid == os.getpid():
                return
            self._listener_pid = os.getpid()
            self.listening.clear()
        params = {
            **connections["default"].get_connection_params(),
            "application_name": APPLICATION_NAME,  # to find it in pg_stat_activity
        }
        self._stopping.clear()
        self._listener = threading.Thread(
            target=self._listen, args=(params,), name="run-wakeups", daemon=True
        )
        self._listener.start()

    def stop(self) -> None:
        """End this process's listener, woken by a notification of its own to close its
        connection; the next waiter starts a new one. For the test suite, which drops its
        database."""
        self._stopping.set()
        if self._listener is not None:
            with suppress(DatabaseError, InterfaceError), connections["default"].cursor() as cursor:
                # its wait returns now, rather than at the end of its second
                cursor.execute("SELECT pg_notify(%s, '')", [CHANNEL])
            self._listener.join(timeout=5)
        self._listener = None
        self._listener_pid = None

    def _listen(self, params: dict) -> None:
        import psycopg

        pause = 0.5
        while not self._stopping.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as listener:
                    listener.execute(f"LISTEN {CHANNEL}")
                    listener.execute(f"LISTEN {ACCESS_CHANNEL}")
                    self.listening.set()
                    pause = 0.5
                    while not self._stopping.is_set():
                        for notification in listener.notifies(timeout=LISTEN_WAIT_S):
                            if self._stopping.is_set():
                                break
                            if notification.channel == ACCESS_CHANNEL:
                                self.access_changed(notification.payload)
                            else:
                                self.wake(notification.payload)
            except Exception as exc:  # the database went away: reconnect; waiters poll
                logger.warning("run wake-ups: listener stopped (%s); reconnecting", exc)
            finally:
                self.listening.clear()
                self.access_changed("*")  # one may have been lost: every reader re-checks
                # (and each waiter goes back to its own polling interval at once)
            self._stopping.wait(pause)
            pause = min(pause * 2, RECONNECT_MAX_S)


run_wakeups = RunWakeups()
