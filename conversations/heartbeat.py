"""A run's heartbeat: a background thread that stamps ``Run.heartbeat_at`` while the run
works, so the recovery sweep can tell a slow run from a dead one, and that notices a
cancellation request so the loop can stop at its next step without asking the database."""

from __future__ import annotations

import logging
import threading
import uuid

from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from conversations.models import Run, RunStatus

logger = logging.getLogger(__name__)


class Heartbeat:
    def __init__(self, run_id: uuid.UUID, *, interval: float) -> None:
        self.run_id = run_id
        self.interval = interval
        self._stop = threading.Event()
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{run_id}", daemon=True)

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def __enter__(self) -> Heartbeat:
        if Run.objects.filter(pk=self.run_id, cancel_requested=True).exists():
            self._cancel.set()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    close_old_connections()
                    Run.objects.filter(pk=self.run_id, status=RunStatus.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                    if Run.objects.filter(pk=self.run_id, cancel_requested=True).exists():
                        self._cancel.set()
                except DatabaseError:
                    # The database may be restarting; the next beat tries again.
                    logger.warning("heartbeat of run %s failed", self.run_id, exc_info=True)
                    connection.close()
        finally:
            connection.close()
