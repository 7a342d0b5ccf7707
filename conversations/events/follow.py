"""Following a run: what happened since a position (events, a wait that ended with
nothing, the end and why), for the event stream, the ``?wait=`` long poll and the UI
message stream alike, which only say it in their own format.

The loop is written once (``_follow``) and reads nothing itself: it asks for a read and
is handed what it got. ``follow_run`` drives it with a coroutine's reads (served under
ASGI, as in production: a wait holds no thread); ``follow_run_sync`` with a thread's
(a view served under WSGI, as the test client serves it).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass
from enum import StrEnum

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from adstudio.db.connection import release_connection
from conversations.events.access import ReaderAccess
from conversations.events.reads import arun_events_page
from conversations.events.waits import run_events_page
from conversations.models import Run, RunEvent, RunEventType, RunStatus

# The longest a wait lasts before a keep-alive: under WSGI the thread reads again then;
# under ASGI only a wake-up reads, and the tick keeps proxies from closing the stream.
KEEPALIVE_S = 5.0
ASYNC_KEEPALIVE_S = 15.0


@dataclass(frozen=True, slots=True)
class Events:
    """Events read together (at least one, in order), with the run's status read by the
    same statement (a finished status comes with all of its events)."""

    events: list[RunEvent]
    run_status: str


@dataclass(frozen=True, slots=True)
class KeepAlive:
    """A wait ended with nothing new, and the run has not finished."""


KEEP_ALIVE = KeepAlive()


class Ending(StrEnum):
    FINISHED = "finished"  # the run finished and each of its events was yielded
    DEADLINE = "deadline"  # the follow's time ran out
    DATABASE_GONE = "database_gone"  # a read failed: the reader may resume later
    ACCESS_REVOKED = "access_revoked"  # the reader may no longer read the run


@dataclass(frozen=True, slots=True)
class End:
    """The last thing a follow yields."""

    why: Ending
    error: DatabaseError | None = None  # DATABASE_GONE: what the database said


Happening = Events | KeepAlive | End


@dataclass(frozen=True, slots=True)
class _Read:
    """The loop's request: the run's events after ``after``, waiting up to ``wait``."""

    after: int
    status: str
    wait: float


# What a read gave: the events, the run's status and whether the reader may still read
# the run; or the error that stopped it.
_Outcome = tuple[list[RunEvent], str, bool] | DatabaseError


def _follow(
    run: Run, *, after: int, duration: float, keepalive: float
) -> Generator[_Read | Happening, _Outcome | None, None]:
    """The one loop. It reads at least once (a long poll of a moment still answers with
    what is there), then until the run finished and all of its events were yielded, or
    ``duration`` seconds pass, each wait at most ``keepalive`` seconds. What was read by
    a reader who lost access is not yielded."""
    last, status = after, run.status
    deadline = time.monotonic() + duration
    while True:
        wait = max(0.0, min(keepalive, deadline - time.monotonic()))
        outcome = yield _Read(after=last, status=status, wait=wait)
        if isinstance(outcome, DatabaseError):
            yield End(Ending.DATABASE_GONE, error=outcome)
            return
        events, status, allowed = outcome
        if not allowed:
            yield End(Ending.ACCESS_REVOKED)
            return
        if events:
            last = events[-1].seq
            yield Events(events, status)
        elif status in RunStatus.finished():
            yield End(Ending.FINISHED)
            return
        else:
            yield KEEP_ALIVE
        if time.monotonic() >= deadline:
            yield End(Ending.DEADLINE)
            return


def _finishes(events: list[RunEvent]) -> bool:
    return any(event.type == RunEventType.RUN_FINISHED for event in events)


async def follow_run(
    run: Run,
    *,
    after: int,
    duration: float,
    reader: ReaderAccess,
    keepalive: float = ASYNC_KEEPALIVE_S,
    refresh_on_finish: tuple[str, ...] = (),
) -> AsyncIterator[Happening]:
    """What happens to ``run`` after the event ``after``, waiting without a thread: each
    read borrows one for its query, shared with the process's other followers of the run
    (``events.reads``). ``reader`` is checked again after each read, and an access
    change ends a wait. ``refresh_on_finish``: fields of ``run`` read again, in the same
    step, when its ``run.finished`` event is read (the UI stream's finish reads them)."""

    async def read(request: _Read) -> _Outcome:
        try:
            events, status = await arun_events_page(
                run_id=run.pk,
                status=request.status,
                after=request.after,
                wait=request.wait,
                interrupted=reader.changed,
            )
            if refresh_on_finish and _finishes(events):
                await sync_to_async(_refresh, thread_sensitive=False)(run, refresh_on_finish)
            return events, status, await reader.aallowed()
        except DatabaseError as error:
            return error

    steps = _follow(run, after=after, duration=duration, keepalive=keepalive)
    outcome: _Outcome | None = None
    while True:
        step = steps.send(outcome)
        outcome = None
        if isinstance(step, _Read):
            outcome = await read(step)
            continue
        yield step
        if isinstance(step, End):
            return


def follow_run_sync(
    run: Run,
    *,
    after: int,
    duration: float,
    reader: ReaderAccess,
    keepalive: float = KEEPALIVE_S,
    refresh_on_finish: tuple[str, ...] = (),
) -> Iterator[Happening]:
    """``follow_run`` in the calling thread, which waits (a view served under WSGI)."""

    def read(request: _Read) -> _Outcome:
        try:
            events, status = run_events_page(
                run_id=run.pk,
                status=request.status,
                after=request.after,
                wait=request.wait,
                interrupted=reader.changed,
            )
            if refresh_on_finish and _finishes(events):
                run.refresh_from_db(fields=refresh_on_finish)
            return events, status, reader.allowed()
        except DatabaseError as error:
            return error

    steps = _follow(run, after=after, duration=duration, keepalive=keepalive)
    outcome: _Outcome | None = None
    while True:
        step = steps.send(outcome)
        outcome = None
        if isinstance(step, _Read):
            outcome = read(step)
            continue
        yield step
        if isinstance(step, End):
            return


def _refresh(run: Run, fields: tuple[str, ...]) -> None:
    try:
        run.refresh_from_db(fields=fields)
    finally:
        release_connection()
