"""The streams of one run served by one process (ASGI) share their reads of its events:
those woken together read the database once, and none is answered from a read older than
the run's last wake-up."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import connections

from conversations.events import reads as event_reads
from conversations.events.wakeups import run_wakeups
from conversations.models import Conversation, Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(ad) -> Run:
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")
    for seq in (1, 2, 3):
        RunEvent.objects.create(run=run, seq=seq, type="text", data={"delta": str(seq)})
    return run


@pytest.fixture
def reads(monkeypatch) -> list[int]:
    """The positions the database was read after (the real read, counted)."""
    made: list[int] = []
    real = event_reads._read

    async def counted(run_id, after):
        made.append(after)
        return await real(run_id, after)

    monkeypatch.setattr(event_reads, "_read", counted)
    return made


@pytest.fixture
def listener_connected(monkeypatch):
    """The listener said to be connected, and no real one: wake-ups are the test's (one
    an earlier test started would wake the run on its events' notifications)."""
    run_wakeups.stop()
    connected = threading.Event()
    connected.set()
    monkeypatch.setattr(run_wakeups, "listening", connected)
    monkeypatch.setattr(run_wakeups, "_start_listener", lambda: None)
    return connected


def page(run: Run, after: int = 0, wait: float = 0):
    return event_reads.arun_events_page(run_id=run.pk, status=run.status, after=after, wait=wait)


def seqs(result) -> list[int]:
    return [event.seq for event in result[0]]


def test_streams_of_a_run_woken_together_read_once(run, reads, listener_connected):
    async def ten_streams():
        return await asyncio.gather(*(page(run) for _ in range(10)))

    results = asyncio.run(ten_streams())

    assert [seqs(result) for result in results] == [[1, 2, 3]] * 10
    assert reads == [0]
    connections.close_all()


def test_a_stream_elsewhere_in_the_run_reads_for_itself(run, reads, listener_connected):
    async def streams():
        return await asyncio.gather(page(run), page(run), page(run, after=2))

    results = asyncio.run(streams())

    assert [seqs(result) for result in results] == [[1, 2, 3], [1, 2, 3], [3]]
    assert sorted(reads) == [0, 2]
    connections.close_all()


def _append(run: Run, seq: int) -> None:
    try:
        RunEvent.objects.create(run=run, seq=seq, type="text", data={"delta": str(seq)})
    finally:
        connections.close_all()


@pytest.mark.parametrize("woken", [True, False], ids=["after a wake-up", "listener down"])
def test_no_stream_is_answered_from_a_read_older_than_the_last_wake_up(
    run, reads, listener_connected, woken
):
    """A follower keeps the run's reads alive; the first read is shared until something
    says the run may have more: its wake-up, or no listener to say so."""

    async def streams():
        follower = asyncio.create_task(page(run, after=3, wait=30))  # waits on the run
        first = await page(run)
        again = await page(run)  # nothing since: the same read answers
        await asyncio.to_thread(_append, run, 4)
        if woken:
            run_wakeups.wake(run.pk)
        else:
            listener_connected.clear()
        later = await page(run)
        follower.cancel()
        return first, again, later

    first, again, later = asyncio.run(streams())

    assert seqs(first) == seqs(again) == [1, 2, 3]
    assert seqs(later) == [1, 2, 3, 4]
    assert reads.count(0) == 2  # the first read, and the one after the wake-up
    connections.close_all()
