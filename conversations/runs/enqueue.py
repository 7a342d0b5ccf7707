"""A run's task sent once the run is stored: by its name through the Celery app, after
the transaction commits; a broker outage leaves the run queued for the recovery sweep."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction

from adstudio.celery import app as celery_app
from conversations.models import Run, RunStatus

logger = logging.getLogger(__name__)

ENQUEUE_FAILED = "enqueue_failed"
RUN_AGENT_TASK = "conversations.tasks.run_agent"


def run_enqueue(*, run_id: uuid.UUID) -> None:
    """Send the run's task once the current transaction commits.

    If the broker is down, the run stays queued with ``error_code=enqueue_failed`` and
    the recovery sweep enqueues it later; the caller's request does not fail.
    """

    def send() -> None:
        # By name through the Celery app, whose registry has it (ConversationsConfig.ready
        # imports the tasks, which import this module); delay() keeps eager mode, which
        # send_task would not.
        run_agent_task = celery_app.tasks[RUN_AGENT_TASK]
        try:
            run_agent_task.delay(str(run_id))
        except Exception as exc:
            if settings.CELERY_TASK_ALWAYS_EAGER:
                raise  # in-process: the error is the run's own, already recorded on it
            logger.warning("could not enqueue run %s: %s", run_id, exc)
            Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
                error_code=ENQUEUE_FAILED,
                error_message="The task queue was unavailable; the run will be retried.",
            )

    transaction.on_commit(send)
