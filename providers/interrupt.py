"""Ending a provider call in progress from another thread: a run cancelled while its
model is streaming stops within the moment, not when the reply ends.

The loop makes its model calls inside ``interruptible(interrupt)``; an adapter reads its
HTTP response inside ``reading(response)``. ``interrupt.interrupt()`` (the worker's
cancel listener) shuts down the sockets being read, so the read fails at once, and the
adapter raises ``Interrupted`` rather than the read's error: never retried, never sent
on to another provider.

A reply gives nothing to read until the provider sends its headers: for a reply that is
not streamed, when it has finished; for a stream, its first token, which may take
seconds. Until then the request runs in a thread of its own (``waited``), and an
interruption stops the wait at once, leaving that thread to finish and its reply unread
(closed, so its connection is not kept).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

logger = logging.getLogger(__name__)


class CallInterrupt:
    """One run's: set once, for good."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []
        self._set = False

    @property
    def is_set(self) -> bool:
        return self._set

    def interrupt(self) -> None:
        with self._lock:
            self._set = True
            closers, self._closers = self._closers, []
        for close in closers:
            try:
                close()
            except Exception:  # a response closed twice, a socket already gone
                logger.debug("closing an interrupted response failed", exc_info=True)

    @contextlib.contextmanager
    def _closing(self, close: Callable[[], None]) -> Iterator[None]:
        with self._lock:
            interrupted = self._set
            if not interrupted:
                self._closers.append(close)
        if interrupted:  # it came while the request was on its way: read nothing
            close()
        try:
            yield
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._closers.remove(close)


_current: ContextVar[CallInterrupt | None] = ContextVar("provider_call_interrupt", default=None)


@contextlib.contextmanager
def interruptible(interrupt: CallInterrupt) -> Iterator[None]:
    """Provider calls made in this block end when ``interrupt`` is set."""
    token = _current.set(interrupt)
    try:
        yield
    finally:
        _current.reset(token)


def closing(close: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
    """While a response is read: ``close`` is called if the call is interrupted."""
    interrupt = _current.get()
    return interrupt._closing(close) if interrupt is not None else contextlib.nullcontext()


def reading(response) -> contextlib.AbstractContextManager[None]:
    """``closing`` for an httpx response: an interruption shuts its socket down, which
    wakes the thread blocked reading it (closing alone would not), and closes it."""

    def abort() -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    return closing(abort)


class Abandoned(Exception):
    """The call was interrupted while its reply was awaited: the reply is not read."""


def waited[T](call: Callable[[], T], *, discard: Callable[[T], None] | None = None) -> T:
    """``call()``'s result, waited for so that an interruption ends the wait at once
    (``Abandoned``); a result that comes after is given to ``discard`` (a response to
    close). Outside ``interruptible`` it is simply called."""
    interrupt = _current.get()
    if interrupt is None:
        return call()
    done = threading.Event()
    outcome: dict[str, object] = {}
    lock = threading.Lock()

    def run() -> None:
        try:
            value = call()
        except BaseException as exc:
            with lock:
                outcome["error"] = exc
        else:
            with lock:
                abandoned = "abandoned" in outcome
                outcome["value"] = value
            if abandoned and discard is not None:
                with contextlib.suppress(Exception):
                    discard(value)
        finally:
            done.set()

    # With this context (the caller's trace, its request's logging ids), not a bare one.
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(run,), name="provider-reply", daemon=True).start()
    with interrupt._closing(done.set):
        done.wait()
    with lock:
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        if "value" not in outcome:  # woken by the interruption, not by the reply
            outcome["abandoned"] = True
            raise Abandoned
    return outcome["value"]  # type: ignore[return-value]


def interrupted() -> bool:
    interrupt = _current.get()
    return interrupt is not None and interrupt.is_set
