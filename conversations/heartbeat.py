"""Heartbeats of the runs a worker process is executing.

One background thread per process stamps ``Run.heartbeat_at`` for every active run in a
single UPDATE, so the recovery sweep can tell a slow run from a dead one, and reads the
runs' cancellation requests in one query, so the loop can stop at its next step without
asking the database itself. One thread and one connection, however many runs.
"""

from __future__ import annotations

import logging
import threading
import uuid

from django.db import DatabaseError, connection
from django.utils import timezone

from conversations.models import Run, RunStatus

logger = logging.getLogger(__name__)


class _Monitor:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[uuid.UUID, threading.Event] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.interval = 10.0

    def register(self, run_id: uuid.UUID, interval: float) -> threading.Event:
        cancelled = threading.Event()
        with self._lock:
            self._runs[run_id] = cancelled
            if interval < self.interval:
                self.interval = interval
                self._wake.set()  # the thread may be sleeping a longer interval
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._beat, name="run-heartbeats", daemon=True
                )
                self._thread.start()
        return cancelled

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
                    Run.objects.filter(pk__in=runs, status=RunStatus.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                    cancelled = Run.objects.filter(pk__in=runs, cancel_requested=True)
                    for run_id in cancelled.values_list("pk", flat=True):
                        runs[run_id].set()
                except DatabaseError:
                    # The database may be restarting; the next beat tries again.
                    logger.warning("run heartbeat failed", exc_info=True)
                finally:
                    connection.close()  # held for one beat only, not between beats
        finally:
            connection.close()


_monitor = _Monitor()


class Heartbeat:
    """While in this context, ``run_id`` is kept alive and watched for cancellation."""

    def __init__(self, run_id: uuid.UUID, *, interval: float, cancelled: bool = False) -> None:
        self.run_id = run_id
        self.interval = interval
        self._already_cancelled = cancelled
        self._cancelled = threading.Event()

    @property
    def cancel_requested(self) -> bool:
        return self._cancelled.is_set()

    def __enter__(self) -> Heartbeat:
        self._cancelled = _monitor.register(self.run_id, self.interval)
        if self._already_cancelled:
            self._cancelled.set()
        return self

    def __exit__(self, *exc_info: object) -> None:
        _monitor.unregister(self.run_id)
