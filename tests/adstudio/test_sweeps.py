"""The periodic sweeps every worker process runs: never two processes in one sweep at once
(a PostgreSQL advisory lock, here held on two real connections), a database that cannot be
reached skipping the turn, and the sweeps the apps register."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from django.db import OperationalError, connection

from adstudio import sweeps
from adstudio.sweeps import Sweep, sweep_once

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_processes_never_run_one_sweep_at_once():
    inside, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def slow() -> None:
        ran.append(threading.current_thread().name)
        inside.set()
        release.wait(10)

    sweep = Sweep("test-exclusive", 10.0, slow)
    first = threading.Thread(target=lambda: sweep_once(sweep), name="first")
    first.start()
    try:
        assert inside.wait(10)
        assert sweep_once(sweep) is False  # another connection holds the sweep's lock
        assert sweep_once(Sweep("test-other", 10.0, lambda: ran.append("other"))) is True
    finally:
        release.set()
        first.join(10)

    assert ran == ["first", "other"]
    assert sweep_once(sweep) is True  # the lock went with the first one's transaction
    assert ran == ["first", "other", "MainThread"]


def test_a_process_gone_silent_mid_sweep_loses_the_sweeps_lock(monkeypatch, caplog):
    """A process that stops answering inside a sweep (its host cut off, the process
    frozen): the server ends its session after ``silent_limit``, and another process
    takes the next turn, instead of waiting for the server to notice the silence."""
    monkeypatch.setattr(sweeps, "MIN_SILENT_LIMIT_S", 0.5)
    inside, release = threading.Event(), threading.Event()
    first_result: list[bool] = []
    ran: list[str] = []

    def silent() -> None:
        ran.append("first")
        inside.set()
        release.wait(20)  # holding the lock, sending nothing

    sweep = Sweep("test-silent", 0.5, silent)
    first = threading.Thread(target=lambda: first_result.append(sweep_once(sweep)))
    first.start()
    try:
        assert inside.wait(10)
        assert sweep_once(Sweep("test-silent", 0.5, lambda: ran.append("second"))) is False
        started = time.monotonic()
        while not sweep_once(Sweep("test-silent", 0.5, lambda: ran.append("second"))):
            assert time.monotonic() - started < 10, "the silent process kept the sweep's lock"
            time.sleep(0.1)
    finally:
        release.set()
        first.join(10)

    assert ran == ["first", "second"]
    assert first_result == [False]  # its session was ended: nothing of its turn committed
    assert "sweep test-silent ended by the database: 0.5 s without a statement" in caplog.text


def test_a_sweep_tells_the_server_how_long_it_may_be_silent():
    seen: list[str] = []

    def show() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SHOW idle_in_transaction_session_timeout")
            seen.append(cursor.fetchone()[0])

    assert sweep_once(Sweep("test-recovery", 10.0, show)) is True
    assert sweep_once(Sweep("test-hourly-prune", 3600.0, show)) is True
    assert seen == ["10s", "1h"]
    with connection.cursor() as cursor:  # for the sweep's transaction only
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        assert cursor.fetchone()[0] == "0"


def test_a_database_that_cannot_be_reached_skips_the_turn(caplog):
    def unreachable() -> None:
        raise OperationalError("server closed the connection unexpectedly")

    with caplog.at_level(logging.WARNING, logger="adstudio.sweeps"):
        assert sweep_once(Sweep("test-unreachable", 10.0, unreachable)) is False

    assert "sweep test-unreachable skipped: the database is unreachable" in caplog.text
    assert connection.connection is None  # the connection is handed back, not kept


def test_a_sweep_that_raises_is_logged_and_the_next_still_runs(caplog):
    def broken() -> None:
        raise KeyError("a bug")

    with caplog.at_level(logging.ERROR, logger="adstudio.sweeps"):
        assert sweep_once(Sweep("test-broken", 10.0, broken)) is False

    assert "sweep test-broken failed" in caplog.text
    assert sweep_once(Sweep("test-next", 10.0, lambda: None)) is True


def test_the_apps_register_their_recovery_sweeps(settings):
    registered = {name: s.interval for name, s in sweeps._sweeps.items()}

    assert registered["runs"] == settings.ADSTUDIO_RECOVERY_INTERVAL == 10.0
    assert registered["renders"] == settings.ADSTUDIO_RECOVERY_INTERVAL
    assert registered["render-files"] == 3600.0


@pytest.mark.parametrize("enabled", [True, False])
def test_a_ready_worker_sweeps_unless_its_sweeps_are_off(settings, monkeypatch, enabled):
    from adstudio.celery import _sweep_in_every_worker

    settings.ADSTUDIO_SWEEPS = enabled
    started: list[bool] = []
    monkeypatch.setattr(sweeps, "start", lambda: started.append(True))

    _sweep_in_every_worker()

    assert started == ([True] if enabled else [])
