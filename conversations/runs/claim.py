"""A run claimed by a worker with a token: one worker at a time, the runs of a
conversation in order, a bounded number of takeovers from workers that stopped."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction

import providers
from adstudio.db.batch import Batch
from adstudio.db.clock import database_now
from adstudio.db.sql import column, columns, from_row, prep, quote_name, uuid_param
from conversations.models import (
    Conversation,
    Message,
    MessageRole,
    ModelCall,
    Run,
    RunEvent,
    RunEventType,
    RunStatus,
    StopCause,
)
from conversations.record import log as run_log
from conversations.record.log import EventLog
from conversations.record.messages import history_rows_from, history_sql
from conversations.runs.enqueue import ENQUEUE_FAILED
from conversations.runs.finish import finish_locked
from conversations.runs.locks import after_unfinished_params, after_unfinished_sql, run_lock
from drafts.models import Ad
from drafts.selectors import latest_versions_from, latest_versions_sql
from drafts.services import LatestVersions

logger = logging.getLogger(__name__)


def heartbeat_fresh(run: Run, now) -> bool:
    """Whether the worker holding ``run`` beat recently enough to be taken for alive."""
    stale_after = timedelta(seconds=settings.ADSTUDIO_RUN_STALE_AFTER)
    return run.heartbeat_at is not None and now - run.heartbeat_at < stale_after


@dataclass
class Claim:
    """A run taken by this worker, with its event log and whether it is being cancelled."""

    run: Run
    events: EventLog
    cancel_requested: bool
    resumed: bool = False  # claimed before: it continues from what is stored
    # The ad's latest draft versions and the conversation's history (``history_rows``),
    # when the claim read them.
    draft_versions: LatestVersions | None = None
    history: list | None = None
    # The (id, seq) of the run's user message when the claim wrote it (its token count
    # is the loop's to write), and whether the claim wrote round 1's model_call.started.
    user_message: tuple[int, int] | None = None
    call_announced: bool = False


_CLAIMED_FIELDS = (
    "status",
    "started_at",
    "heartbeat_at",
    "error_code",
    "error_message",
    "claims",
    "resumes",
)
RESUME_LIMIT = "resume_limit"
# How long a worker that lost its database waits to take its own run back. Past the stale
# limit another worker may take it over once the database is back (this one then stops);
# until then a worker that outlasts an outage (90 s, say) goes on with no resume counted.
DATABASE_PATIENCE_S = 120.0


def run_claim(*, run_id: uuid.UUID, holder: int | None = None) -> Claim | None:
    """Take the run for this worker, or return None when it must not run now.

    Under the conversation's row lock: a finished run, a run another live worker holds
    (fresh heartbeat), and a run with an earlier unfinished run in its conversation are
    left alone; the earlier run starts this one when it finishes. ``holder`` is the claim
    token of a worker that holds the run and takes it again to resume it from what is
    stored (after losing its database connection): its own fresh heartbeat does not stop
    it, a takeover by another worker (a higher token) does.

    The earlier runs are read by the locking statement, so after waiting for the lock it
    may still see as running a run whose finish it waited for. It then leaves the run
    alone, and the finished run starts it: that lookup runs after its finish commits.

    Taking a run over from a worker that stopped counts in ``Run.resumes``; a run already
    resumed ``ADSTUDIO_RUN_MAX_RESUMES`` times is ended ``failed`` (``resume_limit``)
    instead, and its conversation's next run starts: a run that kills every worker it
    runs on must not take them all down in turn for ever. A claim of a queued run (its
    first, or after staff requeued it) starts the count again.

    On PostgreSQL a queued run whose turn has come, the common case, is claimed by one
    statement (``_claim_queued``); any other run is decided here, under the locks.
    """
    if holder is None and connection.vendor == "postgresql":
        claim = _claim_queued(run_id)
        if claim is not None:
            return claim
    with transaction.atomic():
        now = database_now()  # staleness and the claim's times by the database's clock
        locked = run_lock(run_id=run_id)
        if locked is None:
            return None
        run = locked.run
        if run.status in RunStatus.finished():
            return None
        if run.status == RunStatus.QUEUED and run.cancel_requested:
            finish_locked(run, status=RunStatus.CANCELLED, cause=StopCause.CANCELLED)
            return None
        if holder is not None and (run.status != RunStatus.RUNNING or run.claims != holder):
            return None
        if run.status == RunStatus.RUNNING and heartbeat_fresh(run, now) and holder is None:
            return None
        if locked.after_unfinished:
            return None
        taken_over = run.status == RunStatus.RUNNING and holder is None  # its worker stopped
        if taken_over and run.resumes >= settings.ADSTUDIO_RUN_MAX_RESUMES:
            _end_past_resume_limit(run)
            return None
        resumed = _take(run, now, taken_over=taken_over)
        events = EventLog(run, next_seq=None if resumed else 1)
        writes = Batch()
        writes.update(Run, run.pk, **{f: getattr(run, f) for f in _CLAIMED_FIELDS})
        writes.insert(*events.numbered(run_log.run_started_event(resumed=resumed)))
        writes.write()
        return Claim(run=run, events=events, cancel_requested=run.cancel_requested, resumed=resumed)


def _take(run: Run, now, *, taken_over: bool) -> bool:
    """Set ``run``'s fields as this worker's claim leaves them (``_claim_queued_sql`` writes
    the same for a queued run, in SQL). Returns whether the run was claimed before: a stuck
    one taken over, or a failed or stuck one that staff requeued, whose events continue
    their numbering."""
    if taken_over:
        run.resumes += 1
    elif run.status == RunStatus.QUEUED:
        run.resumes = 0
    resumed = run.status == RunStatus.RUNNING or run.started_at is not None
    run.status = RunStatus.RUNNING
    run.started_at = run.started_at or now
    run.heartbeat_at = now
    run.claims += 1  # this worker's token: a later claim makes it stale
    if run.error_code == ENQUEUE_FAILED:
        run.error_code, run.error_message = "", ""
    return resumed


def _claim_queued(run_id: uuid.UUID) -> Claim | None:
    """Claim a queued run whose turn has come in one statement, under the same row locks
    as ``run_claim``'s: three round trips fewer (BEGIN, the write, COMMIT) at the start of
    every run. None, with nothing written, for any other run."""
    with connection.cursor() as cursor:
        cursor.execute(
            _claim_queued_sql(),
            [
                uuid_param(run_id),
                RunStatus.RUNNING,
                ENQUEUE_FAILED,
                ENQUEUE_FAILED,
                uuid_param(run_id),
                RunStatus.QUEUED,
                *after_unfinished_params(),
                RunEventType.RUN_STARTED,
                RunEventType.MODEL_CALL_STARTED,
                prep(RunEvent, "data", run_log.model_call_started(round_no=1)[1]),
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    run, at = from_row(Run, row)  # as the claim left it
    run.conversation, at = from_row(Conversation, row, at)
    run.conversation.ad, at = from_row(Ad, row, at)
    versions, history, message_id, message_seq, resumed = row[at:]
    # A new run's events: run.started is its 1, model_call.started its 2.
    events = EventLog(run, next_seq=None if resumed else 3)
    return Claim(
        run=run,
        events=events,
        cancel_requested=False,
        resumed=resumed,
        draft_versions=LatestVersions(latest_versions_from(versions)),
        history=history_rows_from(history),
        user_message=None if message_id is None else (message_id, message_seq),
        call_announced=not resumed,
    )


@cache
def _claim_queued_sql() -> str:
    """Lock the run and its conversation (as ``locks.run_lock``), and if the run is queued,
    not being cancelled and after no unfinished run: set the claim's fields (as ``_take``)
    and add its ``run.started`` event, its user message if it has none (next in the
    conversation, its token count 0 until the loop writes it) and, for a run never
    claimed before, whose first step is a model call, round 1's ``model_call.started``.
    Selects the run as the claim left it, its conversation as locked, its ad, the ad's
    latest draft versions, the conversation's history (without that user message), the
    message's id and seq, and whether the run was claimed before; no row when it was not
    claimed now. Reads other than the locking one see the rows as they were before the
    statement: the run's previous ``started_at`` says whether it was claimed before."""
    runs, conversations, ads, events, messages = (
        quote_name(m._meta.db_table) for m in (Run, Conversation, Ad, RunEvent, Message)
    )
    error_code, error_message = column(Run, "error_code"), column(Run, "error_message")
    claimed_before = f"(SELECT o.started_at IS NOT NULL FROM {runs} o WHERE o.id = u.id)"
    return (
        f"WITH k AS MATERIALIZED (SELECT {columns(Conversation, 'c')} FROM {runs} r "
        f"JOIN {conversations} c ON c.id = r.conversation_id WHERE r.id = %s "
        "FOR UPDATE OF r, c), "
        f"u AS (UPDATE {runs} r SET status = %s, "
        "started_at = COALESCE(r.started_at, statement_timestamp()), "
        "heartbeat_at = statement_timestamp(), claims = r.claims + 1, resumes = 0, "
        f"{error_code} = CASE WHEN r.{error_code} = %s THEN '' ELSE r.{error_code} END, "
        f"{error_message} = CASE WHEN r.{error_code} = %s THEN '' ELSE r.{error_message} END "
        "FROM k WHERE r.id = %s AND r.conversation_id = k.id AND r.status = %s "
        f"AND NOT r.cancel_requested AND NOT {after_unfinished_sql()} "
        f"RETURNING {columns(Run, 'r')}), "
        f"started AS (INSERT INTO {events} (run_id, seq, type, data, created_at) "
        f"SELECT u.id, COALESCE((SELECT max(seq) FROM {events} WHERE run_id = u.id), 0) + 1, "
        f"%s, jsonb_build_object('resumed', {claimed_before}), statement_timestamp() FROM u), "
        f"um AS (INSERT INTO {messages} (conversation_id, seq, role, text, tool_calls, "
        "tool_call_id, name, is_error, provider_data, tokens, run_id, created_at) "
        "SELECT u.conversation_id, COALESCE((SELECT max(m.seq) FROM "
        f"{messages} m WHERE m.conversation_id = u.conversation_id), 0) + 1, "
        f"'{MessageRole.USER}', u.input_text, '[]', '', '', false, '{{}}', 0, u.id, "
        "statement_timestamp() FROM u "
        f"WHERE NOT EXISTS (SELECT 1 FROM {messages} m WHERE m.run_id = u.id "
        f"AND m.role = '{MessageRole.USER}') RETURNING id, seq), "
        f"announced AS (INSERT INTO {events} (run_id, seq, type, data, created_at) "
        f"SELECT u.id, 2, %s, %s, statement_timestamp() FROM u WHERE NOT {claimed_before}) "
        f"SELECT u.*, k.*, {columns(Ad, 'a')}, {latest_versions_sql('a.id')}, "
        f"{history_sql('k')}, um.id, um.seq, {claimed_before} "
        f"FROM u JOIN k ON k.id = u.conversation_id JOIN {ads} a ON a.id = k.ad_id "
        "LEFT JOIN um ON true"
    )


def _end_past_resume_limit(run: Run) -> None:
    """End ``run`` (locked, running, its last worker gone) failed: it has been resumed as
    often as ``ADSTUDIO_RUN_MAX_RESUMES`` allows."""
    limit = settings.ADSTUDIO_RUN_MAX_RESUMES
    attempts = run.resumes + 1

    def times(n: int) -> str:
        return "once" if n == 1 else f"{n} times"

    logger.error(
        "run %s: its worker stopped during each of its %d attempts; it ends failed (%s)",
        run.pk,
        attempts,
        RESUME_LIMIT,
    )
    _record_interrupted_call(run)
    finish_locked(
        run,
        status=RunStatus.FAILED,
        cause=StopCause.ERROR,
        error_code=RESUME_LIMIT,
        error_message=(
            f"The run was attempted {times(attempts)} and its worker stopped during each "
            f"attempt (killed, or out of touch with the database); it was resumed "
            f"{times(run.resumes)}, the most ADSTUDIO_RUN_MAX_RESUMES={limit} allows, and "
            "is not resumed again. Staff can requeue it once the cause is found."
        ),
    )


def _record_interrupted_call(run: Run) -> None:
    """The last attempt's model call, which its worker died waiting on, gets its row as a
    resumed attempt's does (``RunLog.interrupted_call``): every provider request has one.
    Its provider is the one the run's calls went to, its tokens unknown."""
    earlier = ModelCall.objects.filter(run=run).order_by("-created_at", "-id").first()
    if earlier is not None:
        provider, model = earlier.provider, earlier.model
    else:
        ad = run.conversation.ad
        try:
            binding = providers.route(
                language=ad.language,
                market=ad.market,
                requested=run.conversation.provider or None,
            )[0]
            provider, model = binding.name, binding.model
        except providers.ProviderUnavailable:
            provider, model = run.provider or "unknown", run.model or "unknown"
    row = run_log.interrupted_call_row(run, provider=provider, model=model)
    if row is not None:
        row.save()
        Run.objects.filter(pk=run.pk).update(cost_exact=False)
        run.cost_exact = False


def run_claim_again(*, run_id: uuid.UUID, holder: int) -> Claim | None:
    """The run taken again by the worker that holds it, once the database answers; None
    if another worker has taken it meanwhile, it has ended, or the database stays away
    longer than ``DATABASE_PATIENCE_S`` (the recovery sweep resumes it then)."""
    deadline = time.monotonic() + max(settings.ADSTUDIO_RUN_STALE_AFTER, DATABASE_PATIENCE_S)
    delay = 0.1
    while True:
        connection.close()  # a broken connection goes back to the pool, which drops it
        try:
            return run_claim(run_id=run_id, holder=holder)
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() + delay > deadline:
                logger.warning(
                    "run %s: the database is still unreachable (%s); the recovery sweep "
                    "resumes the run",
                    run_id,
                    exc,
                )
                return None
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
