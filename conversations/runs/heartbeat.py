"""Heartbeats of the runs a worker process is executing.

One background thread per process stamps ``Run.heartbeat_at`` for every active run in a
single UPDATE, so the recovery sweep can tell a slow run from a dead one, and reads the
runs' cancellation requests and claims in one query, so the loop can stop at its next
step without asking the database itself. One thread and one connection, however many
runs. A second thread listens for cancellations as they are committed and interrupts the
cancelled run's model call at once (``providers.interrupt``).

A run whose heartbeats failed for longer than ``ADSTUDIO_RUN_STALE_AFTER`` (a database
outage) is taken for dead and claimed by another worker, which raises ``Run.claims``.
Its first worker sees the higher number at its next beat and stops the run at its next
step without finishing it: the run is the other worker's now. (Its writes check the claim
themselves, ``record.log.holder_fence``, so nothing of it is stored in the moment before
that beat; the beat spares it the model calls it could not record.)
"""

from __future__ import annotations

import logging
import threading
import uuid
from contextlib import suppress
from dataclasses import dataclass, field

from django.db import DatabaseError, InterfaceError, connection
from django.db.models.functions import Now

from conversations.models import Run, RunStatus
from providers.interrupt import CallInterrupt

logger = logging.getLogger(__name__)


CANCEL_CHANNEL = "adstudio_run_cancel"  # services.run_cancel notifies it with the run's id


@dataclass
class _Watched:
    claim: int | None  # the worker's Run.claims token; None: not checked
    cancelled: threading.Event = field(default_factory=threading.Event)
    lost: threading.Event = field(default_factory=threading.Event)
    interrupt: CallInterrupt = field(default_factory=CallInterrupt)  # its model call

    def cancel(self) -> None:
        self.cancelled.set()
        self.interrupt.interrupt()


class _Monitor:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[uuid.UUID, _Watched] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener: threading.Thread | None = None
        self._stopping = threading.Event()
        self.interval = 10.0

    def register(self, run_id: uuid.UUID, interval: float, claim: int | None) -> _Watched:
        watched = _Watched(claim)
        with self._lock:
            self._runs[run_id] = watched
            if interval < self.interval:
                self.interval = interval
                self._wake.set()  # the thread may be sleeping a longer interval
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._beat, name="run-heartbeats", daemon=True
                )
                self._thread.start()
            if connection.vendor == "postgresql" and (
                self._listener is None or not self._listener.is_alive()
            ):
                params = connection.get_connection_params()
                self._stopping.clear()
                self._listener = threading.Thread(
                    target=self._listen, args=(params,), name="run-cancels", daemon=True
                )
                self._listener.start()
        return watched

    def unregister(self, run_id: uuid.UUID) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def _beat(self) -> None:
        try:
            while True:
                self._wake.wait(self.interval)
                self._wake.clear()
                with self._lock:
                    runs = dict(self._runs)
                if not runs:
                    continue
                try:
                    held = []
                    rows = Run.objects.filter(pk__in=runs).values_list(
                        "pk", "claims", "cancel_requested"
                    )
                    for run_id, claims, cancel_requested in rows:
                        watched = runs[run_id]
                        if watched.claim is not None and claims != watched.claim:
                            watched.lost.set()  # another worker took it over
                            continue
                        held.append(run_id)
                        if cancel_requested and not watched.cancelled.is_set():
                            watched.cancel()  # its notification was lost
                    # The database's clock: the sweep judges staleness by it too.
                    Run.objects.filter(pk__in=held, status=RunStatus.RUNNING).update(
                        heartbeat_at=Now()
                    )
                except DatabaseError:
                    # The database may be restarting; the next beat tries again.
                    logger.warning("run heartbeat failed", exc_info=True)
                finally:
                    connection.close()  # held for one beat only, not between beats
        finally:
            connection.close()

    def _listen(self, params: dict) -> None:
        """Cancellations as they are committed (``NOTIFY``): the run's model call is
        interrupted at once, rather than at the run's next step or heartbeat."""
        import psycopg

        pause = 0.5
        while not self._stopping.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as listener:
                    listener.execute(f"LISTEN {CANCEL_CHANNEL}")
                    pause = 0.5
                    while not self._stopping.is_set():
                        for notification in listener.notifies(timeout=1.0):
                            if self._stopping.is_set():
                                break
                            self._cancelled(notification.payload)
            except Exception as exc:  # the database went away: the heartbeat still reads
                logger.warning("run cancels: listener stopped (%s); reconnecting", exc)
            self._stopping.wait(pause)
            pause = min(pause * 2, 30.0)

    def stop_listening(self) -> None:
        """End the cancel listener, woken by a notification of its own to close its
        connection; the next run registered starts another. For the test suite, which
        drops its database."""
        self._stopping.set()
        if self._listener is not None:
            with suppress(DatabaseError, InterfaceError), connection.cursor() as cursor:
                # its wait returns now, rather than at the end of its second
                cursor.execute("SELECT pg_notify(%s, '')", [CANCEL_CHANNEL])
            self._listener.join(timeout=5)
        self._listener = None

    def _cancelled(self, payload: str) -> None:
        try:
            run_id = uuid.UUID(payload)
        except ValueError:
            return
        with self._lock:
            watched = self._runs.get(run_id)
        if watched is not None:
            watched.cancel()


_monitor = _Monitor()
stop_listening = _monitor.stop_listening


def notify_cancel(run_id: uuid.UUID) -> None:
    """Tell the worker holding ``run_id`` that it was cancelled; PostgreSQL delivers it
    when the caller's transaction commits (without PostgreSQL, the heartbeat reads it)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CANCEL_CHANNEL, str(run_id)])


class Heartbeat:
    """While in this context, ``run_id`` is kept alive and watched for cancellation, and
    for a takeover when ``claim`` (the worker's ``Run.claims`` token) is given."""

    def __init__(
        self,
        run_id: uuid.UUID,
        *,
        interval: float,
        cancelled: bool = False,
        claim: int | None = None,
    ) -> None:
        self.run_id = run_id
        self.interval = interval
        self.claim = claim
        self._already_cancelled = cancelled
        self._watched = _Watched(claim)

    @property
    def cancel_requested(self) -> bool:
        return self._watched.cancelled.is_set()

    @property
    def interrupt(self) -> CallInterrupt:
        """Set when the run is cancelled: its model call in progress ends at once."""
        return self._watched.interrupt

    @property
    def lost(self) -> bool:
        """Whether another worker has claimed the run since this one did."""
        return self._watched.lost.is_set()

    def __enter__(self) -> Heartbeat:
        self._watched = _monitor.register(self.run_id, self.interval, self.claim)
        if self._already_cancelled:
            self._watched.cancel()
        return self

    def __exit__(self, *exc_info: object) -> None:
        _monitor.unregister(self.run_id)
