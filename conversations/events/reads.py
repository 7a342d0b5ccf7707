"""A run's events for the streams a process serves under ASGI, read once per wake-up.

Ten streams following one run (a page open in ten tabs, ten EventSources) are woken by
the same notification when the run's next event commits; each reading the database for
itself made ten identical queries, and a thousand streams saturated the process with
them. Here the streams of one run share their reads: a read is keyed by the run's wake-up
generation (``run_wakeups.generation``) and the position read after, a stream asking for
the same one awaits the read already under way, and one asking later is answered from its
result while no wake-up has come since. Each stream still filters what it receives by its
own position, and any stream that asks for something else reads for itself.
"""

from __future__ import annotations

import asyncio
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from asgiref.sync import sync_to_async

from conversations.events.waits import EVENTS_PAGE, events_after_released
from conversations.events.wakeups import run_wakeups
from conversations.models import RunEvent, RunStatus


class _RunReads:
    """The reads of one run's events in one event loop, while streams follow it."""

    __slots__ = ("followers", "generation", "pending", "results")

    def __init__(self) -> None:
        self.followers = 0
        self.generation: tuple[int, int] | None = None  # that of the results kept
        self.results: dict[int, list[RunEvent]] = {}  # by the position read after
        self.pending: dict[tuple[tuple[int, int], int], asyncio.Future] = {}

    def keep(self, generation: tuple[int, int], after: int, events: list[RunEvent]) -> None:
        if generation != self.generation:
            if self.generation is not None and generation < self.generation:
                return  # a read older than those kept
            self.generation, self.results = generation, {}
        self.results[after] = events

    def answer(self, generation: tuple[int, int], after: int) -> list[RunEvent] | None:
        """Every event after ``after`` committed so far, if a kept read holds them."""
        if self.generation != generation or not run_wakeups.listening.is_set():
            return None
        for read_after, events in self.results.items():
            whole = len(events) < EVENTS_PAGE  # not cut at a page: all there was
            if read_after <= after and (whole or after < events[-1].seq):
                return [event for event in events if event.seq > after]
        return None


# Per event loop (a process serves from one; the test suite starts many, one at a time).
_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _RunReads]] = (
    weakref.WeakKeyDictionary()
)
_read = sync_to_async(events_after_released, thread_sensitive=False)


@asynccontextmanager
async def following(run_id: uuid.UUID) -> AsyncIterator[_RunReads]:
    runs = _loops.setdefault(asyncio.get_running_loop(), {})
    key = str(run_id)
    reads = runs.get(key) or runs.setdefault(key, _RunReads())
    reads.followers += 1
    try:
        yield reads
    finally:
        reads.followers -= 1
        if not reads.followers:
            del runs[key]


async def _events_after(reads: _RunReads, run_id: uuid.UUID, after: int) -> list[RunEvent]:
    generation = run_wakeups.generation(run_id)
    kept = reads.answer(generation, after)
    if kept is not None:
        return kept
    key = (generation, after)
    read = reads.pending.get(key)
    if read is None:
        read = asyncio.ensure_future(_read(run_id, after))
        reads.pending[key] = read

        def keep(done: asyncio.Future) -> None:
            reads.pending.pop(key, None)
            if not done.cancelled() and done.exception() is None:
                reads.keep(generation, after, done.result())

        read.add_done_callback(keep)
    # Shielded: a stream whose client leaves does not cancel the read for the others.
    return await asyncio.shield(read)


async def arun_events_page(
    *,
    run_id: uuid.UUID,
    status: str,
    after: int = 0,
    wait: float = 0,
    interrupted: Callable[[], bool] = lambda: False,
) -> tuple[list[RunEvent], str]:
    """``waits.run_events_page`` for a coroutine (a stream served under ASGI): the
    wait holds no thread, and a read borrows one for its query, shared with the process's
    other streams of the run that need the same read."""
    deadline = time.monotonic() + wait
    async with following(run_id) as reads, run_wakeups.async_waiter(run_id) as woken:
        while True:
            events = await _events_after(reads, run_id, after)
            if events:
                return events, events[0].run_status
            if status in RunStatus.finished() or time.monotonic() >= deadline or interrupted():
                return [], status
            await run_wakeups.async_wait(woken, deadline - time.monotonic())
