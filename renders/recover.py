"""The renders' recovery sweep, as the runs' (``conversations.runs.recover``): renders whose
task was lost sent again, those whose worker died taken back, and the files no render
names removed. Every judgement of time is the database's clock."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now

from adstudio import observability
from renders import files
from renders.models import FILE_FIELDS, Render, RenderStatus
from renders.services import render_enqueue

logger = logging.getLogger(__name__)

# Times a render is taken back from a worker that died rendering it before it fails: a
# render that kills its worker (out of memory, say) must not take every worker down in turn.
RENDER_MAX_RECLAIMS = 3


def renders_recover() -> list[uuid.UUID]:
    """Send again the renders whose task may have been lost, and only those:

    - rendering, with a lease that ran out (the worker was killed, or lost the database
      past its retries): queued again, or failed, saying why, once it has been taken back
      ``RENDER_MAX_RECLAIMS`` times; the dead claim's files removed;
    - queued, its task last sent more than ``ADSTUDIO_RENDER_STALE_AFTER`` seconds ago
      (lost with a broker restart, or with a killed worker that had taken it), or never
      sent (the broker was down).

    Each render sent is stamped as sent in the sweep's transaction; a sweep running at the
    same time skips the renders this one has locked. The claim sorts out duplicates."""
    waited = Now() - timedelta(seconds=settings.ADSTUDIO_RENDER_STALE_AFTER)
    expired = Q(status=RenderStatus.RENDERING, lease_expires_at__lt=Now())
    lost = Q(status=RenderStatus.QUEUED) & (Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=waited))
    with transaction.atomic():
        rows = list(
            Render.objects.filter(expired | lost)
            .select_for_update(skip_locked=True)
            .order_by("created_at", "pk")
            .values_list("pk", "status", "reclaims", "claims")
        )
        dead = [(pk, claims) for pk, status, _, claims in rows if status == RenderStatus.RENDERING]
        give_up = [
            pk
            for pk, status, reclaims, _ in rows
            if status == RenderStatus.RENDERING and reclaims >= RENDER_MAX_RECLAIMS
        ]
        taken_back = [pk for pk, _ in dead if pk not in give_up]
        unsent = [pk for pk, status, _, _ in rows if status == RenderStatus.QUEUED]
        Render.objects.filter(pk__in=give_up).update(
            status=RenderStatus.FAILED,
            error=(
                f"Its worker stopped {RENDER_MAX_RECLAIMS + 1} times while rendering it "
                "(killed, or out of touch with the database past its lease)."
            ),
            lease_expires_at=None,
            finished_at=Now(),
        )
        Render.objects.filter(pk__in=taken_back).update(
            status=RenderStatus.QUEUED,
            reclaims=F("reclaims") + 1,
            lease_expires_at=None,
            enqueued_at=Now(),
        )
        Render.objects.filter(pk__in=unsent).update(enqueued_at=Now())
        for pk in taken_back + unsent:
            render_enqueue(pk)  # sent once the stamps are committed
        # Storage calls, made once the sweep commits: a slow bucket must not hold the
        # sweep's transaction (and its lock) open, past the sweep's silent limit.
        transaction.on_commit(lambda: _remove_dead_claims_files(dead))
    observability.renders_resent(len(taken_back), "lease_expired")
    observability.renders_resent(len(unsent), "message_lost")
    observability.renders_resent(len(give_up), "gave_up")
    if rows:
        logger.info(
            "recovery: %d render(s) taken back from dead workers, %d failed past %d "
            "reclaims, %d lost message(s) sent again",
            len(taken_back),
            len(give_up),
            RENDER_MAX_RECLAIMS,
            len(unsent),
        )
    return [pk for pk, _, _, _ in rows]


def _remove_dead_claims_files(dead: list[tuple[uuid.UUID, int]]) -> None:
    """The files of the dead claims (``files.prune`` never raises: what storage refuses now
    is left to the render's next claim, which prunes the claims before it)."""
    removed = sum(files.prune(pk, below=claims + 1) for pk, claims in dead)
    if removed:
        logger.info("recovery: %d orphan file(s) removed, of dead claims", removed)


def render_files_prune() -> int:
    """Remove the files of renders that no longer exist, and of renders made before their
    files had folders that no row names; the count, in a log line and a metric."""

    def existing(ids: set[uuid.UUID]) -> set[uuid.UUID]:
        return set(Render.objects.filter(pk__in=ids).values_list("pk", flat=True))

    def named() -> set[str]:
        names: set[str] = set()
        for row in Render.objects.values_list(*FILE_FIELDS.values()):
            names.update(name for name in row if name)
        return names

    removed = files.prune_renders_gone(existing, named)
    logger.info("render files pruned: %d file(s) no render names removed", removed)
    return removed
