"""A run read again each time its events commit (``wakeups``): the next page of its events
after a position, waited for up to a time (long polls, and the streams a thread serves),
and the run waited for to its end. Its rows read in a borrowed thread too, for the
streams a coroutine serves (``reads``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from django.db.models import F

from adstudio.db.connection import release_connection
from conversations.events.wakeups import run_wakeups
from conversations.models import Run, RunEvent, RunStatus


def run_wait(*, run: Run, timeout: float) -> Run:
    """The run, re-read until it finishes or ``timeout`` seconds pass. Read once more as
    soon as the waiter is registered: a finish committed before that woke nobody (a run
    executed in-process, or by a quick worker, ends before its request waits)."""
    deadline = time.monotonic() + timeout
    with run_wakeups.waiter(run.pk) as woken:
        if run.status not in RunStatus.finished():
            run.refresh_from_db()
        while run.status not in RunStatus.finished() and time.monotonic() < deadline:
            release_connection()  # the wait holds a web thread, not a database connection
            run_wakeups.wait(woken, deadline - time.monotonic())
            run.refresh_from_db()
    return run


EVENTS_PAGE = 500


def run_events_page(
    *,
    run_id: uuid.UUID,
    status: str,
    after: int = 0,
    wait: float = 0,
    interrupted: Callable[[], bool] = lambda: False,
) -> tuple[list[RunEvent], str]:
    """``(events, status)``: the run's events after ``after`` and its status, such that a
    finished status comes with all of its events (up to ``EVENTS_PAGE``).

    ``status`` is the run's status as read before this call. Events carry the status read
    by the same statement, and a run's finish commits its ``run.finished`` event with the
    status, so no further read is needed: with no new event, the run has not finished
    since ``status`` was read. When there are none yet and the run is unfinished, waits
    up to ``wait`` seconds for some (long polling); the wait ends as soon as the run's
    next events are committed (``wakeups``), or a wake-up finds ``interrupted()``
    (the reader's access changed: ``events.access``)."""
    deadline = time.monotonic() + wait
    with run_wakeups.waiter(run_id) as woken:
        while True:
            events = _events_after(run_id, after)
            if events:
                return events, events[0].run_status
            if status in RunStatus.finished() or time.monotonic() >= deadline or interrupted():
                return [], status
            release_connection()  # a long poll holds a web thread, not a database connection
            run_wakeups.wait(woken, deadline - time.monotonic())


def _events_after(run_id: uuid.UUID, after: int) -> list[RunEvent]:
    return list(
        RunEvent.objects.filter(run_id=run_id, seq__gt=after)
        .annotate(run_status=F("run__status"))
        .order_by("seq")[:EVENTS_PAGE]
    )


def events_after_released(run_id: uuid.UUID, after: int) -> list[RunEvent]:
    """``_events_after`` in a borrowed thread (a coroutine's read), whose connection goes
    back to the pool."""
    try:
        return _events_after(run_id, after)
    finally:
        release_connection()
