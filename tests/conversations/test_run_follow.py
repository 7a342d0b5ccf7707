"""Following a run (``conversations.events.follow``): what it yields, in order, for each way
a follow goes and ends; the same from a coroutine's reads (ASGI) and a thread's (WSGI),
with the queries each read costs."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from django.db import OperationalError, connections
from django.utils import timezone

from conversations.events import reads as event_reads
from conversations.events import waits
from conversations.events.follow import (
    KEEP_ALIVE,
    End,
    Ending,
    Events,
    follow_run,
    follow_run_sync,
)
from conversations.models import Conversation, Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)  # coroutines read in other threads

DRIVERS = ["sync", "async"]


class Reader:
    """A follower's reader: its access and whether it changed are the test's."""

    def __init__(self, allowed: bool = True, changes: int = 0) -> None:
        self._allowed = allowed
        self.changes = changes  # how many checks say an access change was heard

    def changed(self) -> bool:
        return self.changes > 0

    def allowed(self) -> bool:
        self.changes = max(0, self.changes - 1)
        return self._allowed

    async def aallowed(self) -> bool:
        return self.allowed()


def follow(driver: str, run: Run, *, stop_after: int | None = None, **options) -> list:
    """What the follow yields (its first ``stop_after`` only, then it is closed)."""
    options = {"after": 0, "duration": 5.0, "reader": Reader(), **options}
    if driver == "sync":
        happenings = []
        for happening in follow_run_sync(run, **options):
            happenings.append(happening)
            if len(happenings) == stop_after:
                break
        return happenings

    async def gather() -> list:
        happenings = []
        async for happening in follow_run(run, **options):
            happenings.append(happening)
            if len(happenings) == stop_after:
                break
        return happenings

    try:
        return asyncio.run(gather())
    finally:
        connections.close_all()


def seqs(happening: Events) -> list[int]:
    return [event.seq for event in happening.events]


@pytest.fixture
def finished_run(ad) -> Run:
    run = Run.objects.create(
        conversation=Conversation.objects.create(ad=ad),
        input_text="hi",
        status="succeeded",
        stop_cause="final_answer",
        finished_at=timezone.now(),
    )
    for seq in (1, 2):
        RunEvent.objects.create(run=run, seq=seq, type="text", data={"delta": str(seq)})
    RunEvent.objects.create(run=run, seq=3, type="run.finished", data={"status": "succeeded"})
    return run


@pytest.fixture
def quiet_run(ad) -> Run:
    return Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_finished_runs_events_then_its_end(driver, finished_run):
    events, end = follow(driver, finished_run)

    assert seqs(events) == [1, 2, 3] and events.run_status == "succeeded"
    assert end == End(Ending.FINISHED)


@pytest.mark.parametrize("driver", DRIVERS)
def test_only_what_comes_after_the_position(driver, finished_run):
    events, end = follow(driver, finished_run, after=2)

    assert seqs(events) == [3] and end.why == Ending.FINISHED
    assert follow(driver, finished_run, after=3) == [End(Ending.FINISHED)]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_quiet_run_ticks_at_each_wait_then_ends_at_the_deadline(driver, quiet_run):
    started = time.monotonic()
    happenings = follow(driver, quiet_run, duration=0.5, keepalive=0.1)

    assert happenings[-1] == End(Ending.DEADLINE)
    assert set(happenings[:-1]) == {KEEP_ALIVE} and len(happenings) >= 4, happenings
    assert 0.5 <= time.monotonic() - started < 3


@pytest.mark.parametrize("driver", DRIVERS)
def test_events_committed_while_it_waits_are_yielded(driver, quiet_run):
    def commit_later() -> None:
        time.sleep(0.3)
        try:
            RunEvent.objects.create(run=quiet_run, seq=1, type="text", data={"delta": "Hi"})
        finally:
            connections.close_all()

    committer = threading.Thread(target=commit_later)
    committer.start()
    try:
        happenings = follow(driver, quiet_run, duration=10, keepalive=10, stop_after=1)
    finally:
        committer.join()

    assert [seqs(h) for h in happenings] == [[1]]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_follow_of_no_time_still_reads_once(driver, finished_run):
    """A long poll of a moment answers with what is there."""
    events, end = follow(driver, finished_run, after=1, duration=0)

    assert seqs(events) == [2, 3] and end == End(Ending.DEADLINE)


@pytest.mark.parametrize("driver", DRIVERS)
def test_what_a_reader_who_lost_access_read_is_not_yielded(driver, finished_run):
    assert follow(driver, finished_run, reader=Reader(allowed=False)) == [
        End(Ending.ACCESS_REVOKED)
    ]


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_access_change_ends_a_wait_and_the_follow_goes_on_if_still_allowed(driver, quiet_run):
    reader = Reader(changes=1)
    started = time.monotonic()
    happenings = follow(driver, quiet_run, duration=30, keepalive=30, reader=reader, stop_after=1)

    assert happenings == [KEEP_ALIVE] and time.monotonic() - started < 5


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_lost_database_ends_the_follow_with_its_error(driver, finished_run, monkeypatch):
    lost = OperationalError("the connection was lost")

    def events_after(run_id, after):
        raise lost

    monkeypatch.setattr(waits, "_events_after", events_after)

    assert follow(driver, finished_run) == [End(Ending.DATABASE_GONE, error=lost)]


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_runs_fields_asked_for_are_read_with_its_finished_event(driver, finished_run):
    Run.objects.filter(pk=finished_run.pk).update(error_message="late", prompt_tokens=7)

    follow(driver, finished_run, after=2, refresh_on_finish=("error_message", "prompt_tokens"))
    assert (finished_run.error_message, finished_run.prompt_tokens) == ("late", 7)

    finished_run.error_message = ""
    follow(driver, finished_run, after=2)  # not asked for: not read
    assert finished_run.error_message == ""


def test_a_thread_reads_once_per_read_and_once_more_for_the_finish(
    finished_run, django_assert_num_queries
):
    with django_assert_num_queries(2):  # the events; then none more, and finished
        assert len(follow("sync", finished_run)) == 2
    with django_assert_num_queries(3):  # and the fields, with the run.finished event
        follow("sync", finished_run, refresh_on_finish=("error_message",))


def test_a_coroutine_reads_through_the_shared_reads(finished_run, monkeypatch):
    """Each of its reads is ``events.reads``', which the process's followers share."""
    made: list[int] = []
    real = event_reads._read

    async def counted(run_id, after):
        made.append(after)
        return await real(run_id, after)

    monkeypatch.setattr(event_reads, "_read", counted)

    assert len(follow("async", finished_run)) == 2
    assert made == [0, 3]
