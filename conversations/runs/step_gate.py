"""How many of a worker process's runs compute at once, and in which order.

A thread-pool worker holds many runs that mostly wait on their provider. Between two
model calls a run computes (history, tools, writes) for a few milliseconds, and all of
a process's threads share one interpreter lock. Left alone, the runs whose replies
arrive together share that lock evenly, so every one of them finishes its step only when
the whole burst is done, and the next round's replies arrive together again: each round
costs every run the burst's time. A gate that lets a few runs compute at a time, in the
order they arrived, staggers the runs after their first round, and each run's step then
costs about its own CPU time. Waiting on a provider never holds the gate.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from adstudio.db.connection import release_connection


class StepGate:
    """A first-come, first-served limit on the threads computing at once.

    A freed slot passes straight to the thread that has waited longest, so a thread that
    just gave one back cannot take it again ahead of the queue. ``held`` is reentrant per
    thread (a run finished in eager mode starts the conversation's next run inside it);
    ``released`` gives the slot back for a wait and queues for it again afterwards. A
    thread that has waited ``max_wait`` seconds goes ahead without a slot, so steps stuck
    in the database slow the process's other runs down instead of stopping them.
    ``slots=0`` turns the gate off.
    """

    def __init__(self, slots: int, *, max_wait: float = 10.0) -> None:
        if slots < 0:
            raise ValueError(f"slots must be 0 or more, got {slots}")
        self.slots = slots
        self.max_wait = max_wait
        self._free = slots
        self._lock = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()
        self._local = threading.local()

    @property
    def holding(self) -> bool:
        """Whether the calling thread holds a slot."""
        return getattr(self._local, "slot", False)

    @property
    def waiting(self) -> int:
        """Threads queued for a slot."""
        with self._lock:
            return len(self._waiters)

    @contextmanager
    def held(self) -> Iterator[None]:
        local = self._local
        if not self.slots or getattr(local, "inside", False):
            yield
            return
        local.inside = True
        local.slot = self._acquire()
        try:
            yield
        finally:
            local.inside = False
            if local.slot:
                local.slot = False
                self._release()

    @contextmanager
    def released(self) -> Iterator[None]:
        local = self._local
        if not getattr(local, "inside", False):
            yield
            return
        if local.slot:
            local.slot = False
            self._release()
        try:
            yield
        finally:
            local.slot = self._acquire()

    def _acquire(self) -> bool:
        """Take a slot; False when the wait ran out and the thread goes ahead without."""
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            waiter = threading.Lock()
            waiter.acquire()
            self._waiters.append(waiter)
        try:
            # released by the thread that hands this one its slot
            handed = waiter.acquire(timeout=self.max_wait)
        except BaseException:  # interrupted while queued: leave no slot behind
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                    raise
            self._release()
            raise
        if handed:
            return True
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
                return False
        return True  # handed over between the timeout and the lock

    def _release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()  # the slot passes on, never freed
            else:
                self._free += 1


_gates: dict[int, StepGate] = {}
_gates_lock = threading.Lock()


def step_gate() -> StepGate:
    """The process's gate, sized by ``ADSTUDIO_STEP_SLOTS``: one for all its threads,
    however many ask for it first at once."""
    slots = settings.ADSTUDIO_STEP_SLOTS
    with _gates_lock:
        if slots not in _gates:
            _gates[slots] = StepGate(slots)
        return _gates[slots]


@contextmanager
def provider_wait() -> Iterator[None]:
    """Around a model call: the run holds neither a gate slot nor a database connection
    while it waits, so runs queued for the gate never hold the connections that the
    runs computing need. What it writes in the meantime (streamed text, a failed
    attempt) takes a connection for the write and hands it back."""
    release_connection()
    with step_gate().released():
        try:
            yield
        finally:
            release_connection()
