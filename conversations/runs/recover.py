"""The recovery sweep: runs whose lease was lost (a dead worker, a broker outage) sent
again, once per lost task."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Now

from conversations.models import Run, RunStatus
from conversations.runs.enqueue import ENQUEUE_FAILED, run_enqueue

logger = logging.getLogger(__name__)


def runs_recover() -> list[uuid.UUID]:
    """Enqueue again the runs whose task may have been lost, and only those: a sweep must
    not add a message for a run whose last one is still waiting in the queue, or a backlog
    would grow by itself at every sweep (and a worker coming back after an outage runs
    the sweeps that piled up one after the other).

    - running, with a stale heartbeat (its worker was killed, or lost the database), and
      not sent again since its last heartbeat, or that long ago (that task was lost too);
    - queued, its last task sent more than ``ADSTUDIO_QUEUED_RUN_GRACE`` ago (lost with a
      broker restart, or with a killed worker that had taken it), or never sent (the
      broker was down: ``enqueue_failed``).

    Each run found is stamped as sent (``Run.enqueued_at``) in the sweep's transaction;
    a sweep running at the same time skips the runs this one has locked. Claiming sorts
    out order and duplicates."""
    # The database's clock, which wrote the heartbeats: a sweeping host's own may be off.
    now = Now()
    stale = Now() - timedelta(seconds=settings.ADSTUDIO_RUN_STALE_AFTER)
    waiting = Now() - timedelta(seconds=settings.ADSTUDIO_QUEUED_RUN_GRACE)
    dead_worker = (
        Q(status=RunStatus.RUNNING)
        & (Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale))
        & (
            Q(enqueued_at__isnull=True)
            | Q(enqueued_at__lt=F("heartbeat_at"))
            | Q(enqueued_at__lt=stale)
        )
    )
    task_lost = Q(status=RunStatus.QUEUED) & (
        Q(error_code=ENQUEUE_FAILED)
        | Q(enqueued_at__lt=waiting)
        | Q(enqueued_at__isnull=True, created_at__lt=waiting)
    )
    with transaction.atomic():
        run_ids = list(
            Run.objects.filter(dead_worker | task_lost)
            .select_for_update(skip_locked=True)
            .order_by("created_at", "pk")
            .values_list("pk", flat=True)
        )
        failed_send = Q(error_code=ENQUEUE_FAILED)
        Run.objects.filter(pk__in=run_ids).update(
            enqueued_at=now,
            # Sent now; a send that fails again marks it again (run_enqueue).
            error_code=Case(When(failed_send, then=Value("")), default=F("error_code")),
            error_message=Case(
                When(failed_send, then=Value("")),
                default=F("error_message"),
                output_field=Run._meta.get_field("error_message"),
            ),
        )
        for run_id in run_ids:
            run_enqueue(run_id=run_id)  # sent in this order once the stamps are committed
    if run_ids:
        logger.info("recovery re-enqueued %d run(s)", len(run_ids))
    return run_ids
