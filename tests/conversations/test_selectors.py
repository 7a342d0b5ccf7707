"""Reads that wait: a long poll on a run's events, and a wait for a run's end, woken by
the run's committed events."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from conversations import selectors, services
from conversations.events import waits
from conversations.events import wakeups as wakeups_module
from conversations.events.wakeups import run_wakeups
from conversations.models import Conversation, Run, RunEvent, RunEventType, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued_run(ad) -> Run:
    return Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")


@pytest.fixture
def listening(monkeypatch):
    """The process's listener connected, and no safety-net reads within a test's time: a
    waiter that returns early was woken by a notification."""
    monkeypatch.setattr(wakeups_module, "POLL_WITH_LISTENER_S", 60.0)
    with run_wakeups.waiter("nothing"):
        pass  # starts the listener
    assert run_wakeups.listening.wait(10), "the listener did not connect"


def later(seconds: float, write) -> threading.Thread:
    """``write`` committed from another thread (its own connection) after ``seconds``."""

    def run() -> None:
        time.sleep(seconds)
        try:
            write()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_long_poll_waits_without_holding_a_database_connection(queued_run, monkeypatch):
    # given a queued run with no events yet
    holding: list[object] = []
    monkeypatch.setattr(
        run_wakeups, "wait", lambda event, timeout: holding.append(connection.connection)
    )

    # when a client long-polls its events
    events, _status = waits.run_events_page(
        run_id=queued_run.pk, status=queued_run.status, after=0, wait=0.05
    )

    # then it got none, and each wait happened with the connection back in the pool
    assert events == []
    assert holding and all(held is None for held in holding)


def test_a_long_poll_returns_when_the_runs_next_event_is_committed(queued_run, listening):
    # given a client long-polling for 30 s, and the run's worker writing an event in 0.3 s
    writer = later(
        0.3, lambda: RunEvent.objects.create(run=queued_run, seq=1, type=RunEventType.TEXT)
    )

    # when the poll returns
    started = time.monotonic()
    events, _status = waits.run_events_page(
        run_id=queued_run.pk, status=queued_run.status, after=0, wait=30
    )
    elapsed = time.monotonic() - started
    writer.join()

    # then it returned the event as it was committed, not at a later read
    assert [e.seq for e in events] == [1]
    assert elapsed < 10


def test_a_runs_events_wake_only_the_threads_waiting_on_that_run(queued_run, listening):
    other = Run.objects.create(conversation=queued_run.conversation, input_text="x")
    with run_wakeups.waiter(queued_run.pk) as mine, run_wakeups.waiter(other.pk) as theirs:
        # when the other run's event is committed
        later(0, lambda: RunEvent.objects.create(run=other, seq=1, type=RunEventType.TEXT)).join()

        # then the threads waiting on it are woken, and those waiting on this one are not
        assert theirs.wait(10), "the other run's waiter was not woken"
        assert not mine.is_set()


def test_waiting_for_a_run_ends_when_its_finish_is_committed(queued_run, listening):
    # given a client waiting up to 30 s for a run that finishes in 0.3 s
    writer = later(0.3, lambda: services.run_cancel(run=queued_run))

    # when the wait returns
    started = time.monotonic()
    run = waits.run_wait(run=queued_run, timeout=30)
    writer.join()

    # then the run is finished, seen well before the timeout
    assert run.status == RunStatus.CANCELLED
    assert time.monotonic() - started < 10


def test_waiting_for_a_run_that_finished_before_the_wait_returns_at_once(queued_run, listening):
    # given a run that finished before anyone waited (its wake-up went to nobody), as
    # this process read it before that: queued
    Run.objects.filter(pk=queued_run.pk).update(
        status=RunStatus.SUCCEEDED, finished_at=timezone.now()
    )
    assert queued_run.status == RunStatus.QUEUED

    # when the wait begins
    started = time.monotonic()
    run = waits.run_wait(run=queued_run, timeout=30)

    # then it has read the finish at once, not after a wake-up that never comes
    assert run.status == RunStatus.SUCCEEDED
    assert time.monotonic() - started < 10


def test_the_listener_reconnects_after_its_connection_is_killed(queued_run, listening):
    # given the listener's database connection terminated (a database restart, say)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [wakeups_module.APPLICATION_NAME],
        )
        assert cursor.fetchone() == (True,)
    deadline = time.monotonic() + 10
    while run_wakeups.listening.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)

    # when it is back, and the run's next event is committed during a long poll
    assert run_wakeups.listening.wait(10), "the listener did not reconnect"
    writer = later(
        0.3, lambda: RunEvent.objects.create(run=queued_run, seq=1, type=RunEventType.TEXT)
    )
    started = time.monotonic()
    events, _status = waits.run_events_page(
        run_id=queued_run.pk, status=queued_run.status, after=0, wait=30
    )
    writer.join()

    # then the poll was woken again
    assert [e.seq for e in events] == [1]
    assert time.monotonic() - started < 10


def test_a_waiting_long_poll_reads_the_database_only_when_woken(queued_run, listening):
    # given a client long-polling for 1 s a run that writes nothing meanwhile
    with CaptureQueriesContext(connection) as queries:
        # when the poll times out
        events, _status = waits.run_events_page(
            run_id=queued_run.pk, status=queued_run.status, after=0, wait=1
        )

    # then it read the events once, and once more at the end: not every fraction of a
    # second
    assert events == []
    assert len(queries) == 2, [q["sql"] for q in queries]


def test_a_page_read_after_the_run_finished_says_so_with_its_last_event(queued_run):
    # given the run's status read while it was queued, and the run finished since
    status = queued_run.status
    services.run_cancel(run=queued_run)

    # when its events are read with that status
    events, page_status = waits.run_events_page(
        run_id=queued_run.pk, status=status, after=0, wait=30
    )

    # then the page has the finish and its event, read together, without waiting
    assert page_status == RunStatus.CANCELLED
    assert [e.type for e in events] == [RunEventType.RUN_FINISHED]


def test_a_finished_run_with_no_new_events_returns_at_once(queued_run):
    # given a finished run whose events the client has all seen
    run = services.run_cancel(run=queued_run)
    last = RunEvent.objects.filter(run=run).latest("seq").seq

    # when the client long-polls for more
    started = time.monotonic()
    events, page_status = waits.run_events_page(
        run_id=run.pk, status=run.status, after=last, wait=30
    )

    # then the page is empty and final, and nothing waited
    assert (events, page_status) == ([], RunStatus.CANCELLED)
    assert time.monotonic() - started < 5


def test_the_current_conversation_of_an_ad_is_for_its_workspaces_members_or_a_superuser(
    ad, user, other_user, staff_user, django_user_model
):
    older = Conversation.objects.create(ad=ad, superseded_at=timezone.now())
    newer = Conversation.objects.create(ad=ad)
    Conversation.objects.filter(pk=older.pk).update(created_at=newer.created_at.replace(year=2020))
    staff = django_user_model.objects.create_user(username="sam", is_staff=True)
    for reader, role in ((user, "admin"), (staff_user, None)):  # staff_user: a superuser
        with CaptureQueriesContext(connection) as queries:
            latest, their_role = selectors.conversation_latest_for(reader, ad_id=ad.pk)
            assert (latest.pk, their_role) == (newer.pk, role)
            assert latest.ad.pk == ad.pk and latest.ad.owner_id == user.pk
        assert len(queries) == 1  # the ad and the reader's role come with it
    for outsider in (other_user, staff):
        assert selectors.conversation_latest_for(outsider, ad_id=ad.pk) == (None, None)


def test_a_stopped_listener_ends_at_once_not_when_its_wait_runs_out(monkeypatch, listening):
    # given a listener that would look whether to stop only once a minute
    run_wakeups.stop()
    monkeypatch.setattr(wakeups_module, "LISTEN_WAIT_S", 60.0)
    with run_wakeups.waiter("nothing"):
        pass
    assert run_wakeups.listening.wait(10), "the listener did not connect"
    listener = run_wakeups._listener

    # when it is stopped
    run_wakeups.stop()

    # then its thread has ended (stop waits at most 5 s for it, not the minute)
    assert listener is not None and not listener.is_alive()
