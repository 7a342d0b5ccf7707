"""The worker's lease on a run: its task enqueued once the run is stored, the run claimed
with a token (one worker at a time, runs of a conversation in order, a bounded number of
takeovers from workers that stopped), finished exactly once over a whole history, and
the recovery sweep that enqueues runs whose lease was lost (a dead worker, a broker
outage), once per lost task.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from adstudio import observability
from adstudio.celery import app as celery_app
from adstudio.db import (
    Add,
    Batch,
    column,
    columns,
    fenced_writes,
    from_row,
    prep,
    quote_name,
    uuid_param,
)
from conversations import providers, run_log
from conversations.locks import after_unfinished_params, after_unfinished_sql, run_lock
from conversations.message_rows import history_rows_from, history_sql
from conversations.models import (
    Conversation,
    Message,
    ModelCall,
    Role,
    Run,
    RunEvent,
    RunEventType,
    RunStatus,
    StopCause,
)
from conversations.run_log import RUN_COUNTERS, EventLog, RunLog
from drafts.models import Ad
from drafts.selectors import latest_versions_from, latest_versions_sql
from drafts.services import LatestVersions

logger = logging.getLogger(__name__)

ENQUEUE_FAILED = "enqueue_failed"
RUN_AGENT_TASK = "conversations.tasks.run_agent"


def run_enqueue(*, run_id: uuid.UUID) -> None:
    """Send the run's task once the current transaction commits.

    If the broker is down, the run stays queued with ``error_code=enqueue_failed`` and
    the recovery sweep enqueues it later; the caller's request does not fail.
    """

    def send() -> None:
        # By name through the Celery app, whose registry has it (tasks.py imports this
        # module); delay() keeps eager mode, which send_task would not.
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
    now = timezone.now()
    with transaction.atomic():
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
        writes.insert(*events.numbered(run_log.run_started(resumed=resumed)))
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
    now = timezone.now()
    stamp = prep(Run, "heartbeat_at", now)
    with connection.cursor() as cursor:
        cursor.execute(
            _claim_queued_sql(),
            [
                uuid_param(run_id),
                RunStatus.RUNNING,
                stamp,
                stamp,
                ENQUEUE_FAILED,
                ENQUEUE_FAILED,
                uuid_param(run_id),
                RunStatus.QUEUED,
                *after_unfinished_params(),
                RunEventType.RUN_STARTED,
                prep(RunEvent, "created_at", now),
                prep(Message, "created_at", now),
                RunEventType.MODEL_CALL_STARTED,
                prep(RunEvent, "data", run_log.model_call_started(round_no=1)[1]),
                prep(RunEvent, "created_at", now),
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
        f"u AS (UPDATE {runs} r SET status = %s, started_at = COALESCE(r.started_at, %s), "
        "heartbeat_at = %s, claims = r.claims + 1, resumes = 0, "
        f"{error_code} = CASE WHEN r.{error_code} = %s THEN '' ELSE r.{error_code} END, "
        f"{error_message} = CASE WHEN r.{error_code} = %s THEN '' ELSE r.{error_message} END "
        "FROM k WHERE r.id = %s AND r.conversation_id = k.id AND r.status = %s "
        f"AND NOT r.cancel_requested AND NOT {after_unfinished_sql()} "
        f"RETURNING {columns(Run, 'r')}), "
        f"started AS (INSERT INTO {events} (run_id, seq, type, data, created_at) "
        f"SELECT u.id, COALESCE((SELECT max(seq) FROM {events} WHERE run_id = u.id), 0) + 1, "
        f"%s, jsonb_build_object('resumed', {claimed_before}), %s FROM u), "
        f"um AS (INSERT INTO {messages} (conversation_id, seq, role, text, tool_calls, "
        "tool_call_id, name, is_error, provider_data, tokens, run_id, created_at) "
        "SELECT u.conversation_id, COALESCE((SELECT max(m.seq) FROM "
        f"{messages} m WHERE m.conversation_id = u.conversation_id), 0) + 1, "
        f"'{Role.USER}', u.input_text, '[]', '', '', false, '{{}}', 0, u.id, %s FROM u "
        f"WHERE NOT EXISTS (SELECT 1 FROM {messages} m WHERE m.run_id = u.id "
        f"AND m.role = '{Role.USER}') RETURNING id, seq), "
        f"announced AS (INSERT INTO {events} (run_id, seq, type, data, created_at) "
        f"SELECT u.id, 2, %s, %s, %s FROM u WHERE NOT {claimed_before}) "
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
    longer than a heartbeat may go stale (the recovery sweep resumes it then)."""
    deadline = time.monotonic() + settings.ADSTUDIO_RUN_STALE_AFTER
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


_FINISHED_FIELDS = (
    "status",
    "stop_cause",
    "error_code",
    "error_message",
    "final_message",
    "finished_at",
)


def finish_locked(run: Run, **outcome) -> None:
    """End ``run``, which the caller has locked and found unfinished, with ``outcome``
    (as ``_finished_fields`` takes it); the run's fields are set to match."""
    fields = _finished_fields(**outcome)
    if connection.vendor == "postgresql":
        _write_finish(run.pk, fields)
    else:
        _write_finish_in_steps(run, fields)
    for name, value in fields.items():
        setattr(run, name, value)
    _start_next_after_commit(run.conversation_id)
    observability.run_finished(
        run.pk, status=run.status, error_code=run.error_code, provider=run.provider
    )


def _finished_fields(
    *,
    status: RunStatus,
    cause: StopCause,
    error_code: str = "",
    error_message: str = "",
    final_message: str = "",
) -> dict:
    return {
        "status": status,
        "stop_cause": cause,
        "error_code": error_code,
        "error_message": error_message[:4000],
        "final_message": final_message,
        "finished_at": timezone.now(),
    }


def _write_finish(
    run_id: uuid.UUID,
    fields: dict,
    *,
    claim: int | None = None,
    whole: bool = False,
    answer: RunLog | None = None,
) -> uuid.UUID | None:
    """Write the finish in one statement (PostgreSQL): the run, its usage added to its
    conversation's totals (whose ``updated_at`` is its last activity) and its
    ``run.finished`` event; with ``answer``, its staged step too (``run_finish``).
    Returns the run's conversation, or None when the run had already ended (or, with
    ``whole``, its history is not whole), in which case nothing is written."""
    now = fields["finished_at"]
    sql = _finish_sql(claimed=claim is not None, whole_history=whole, answered=answer is not None)
    params = [
        *(prep(Run, name, fields[name]) for name in _FINISHED_FIELDS),
        *(prep(Run, name, getattr(answer.run, name)) for name in RUN_COUNTERS if answer),
        uuid_param(run_id),
        *RunStatus.finished(),
        *([claim] if claim is not None else []),
    ]
    if whole and answer is not None:
        run = uuid_param(run_id)
        params += [run, answer.rows[-1].seq - 1, run, run]  # the answer is the last row
    elif whole:
        params += [uuid_param(run_id)] * _WHOLE_HISTORY_PARAMS
    params.append(prep(Conversation, "updated_at", now))
    if answer is None:
        finished = _finished_event(fields)
        params += [
            finished[0],
            prep(RunEvent, "data", finished[1]),
            prep(RunEvent, "created_at", now),
        ]
    else:
        # The step's counters are set by the finish's own UPDATE of the run, and its
        # run.finished event follows the step's events.
        answer.batch.pop_update(Run, run_id)
        answer.event(_finished_event(fields))
        ctes, write_params = fenced_writes(answer.batch.statements(fenced=True))
        sql = f"{sql}, {ctes} SELECT conversation_id FROM f"
        params += write_params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if answer is not None:
        answer.batch.clear()
    return None if row is None else Conversation._meta.pk.to_python(row[0])


def _write_finish_in_steps(run: Run, fields: dict) -> None:
    """``_write_finish`` for databases without data-modifying ``WITH``: ``run`` is locked
    and unfinished, and its usage is current."""
    writes = Batch()
    writes.update(Run, run.pk, **fields)
    writes.update(
        Conversation,
        run.conversation_id,
        prompt_tokens=Add(run.prompt_tokens),
        completion_tokens=Add(run.completion_tokens),
        cached_tokens=Add(run.cached_tokens),
        cost=Add(run.cost),
        updated_at=fields["finished_at"],
    )
    writes.insert(*EventLog(run).numbered(_finished_event(fields)))
    writes.write()


def _start_next_after_commit(conversation_id: uuid.UUID) -> None:
    # Looked up once the finish is committed: a run queued meanwhile is then either found
    # there or sees this one finished when its own task claims it.
    transaction.on_commit(lambda: _enqueue_next(conversation_id=conversation_id))


def _enqueue_next(*, conversation_id: uuid.UUID) -> None:
    """Start the conversation's next run, when it is waiting for its turn. The same
    statement that finds it records the send (``Run.enqueued_at``), so the recovery sweep
    does not send another while this one is pending."""
    with connection.cursor() as cursor:
        cursor.execute(
            _enqueue_next_sql(),
            [
                uuid_param(conversation_id),
                *RunStatus.finished(),
                prep(Run, "enqueued_at", timezone.now()),
                RunStatus.QUEUED,
            ],
        )
        following = cursor.fetchone()
    if following is not None:
        run_enqueue(run_id=Run._meta.pk.to_python(following[0]))


# The hot statements of a run's finish are plain SQL: compiling their querysets cost
# more than running them. A conversation's next run is found among its runs "not
# finished", through the conversation's index (conversations/locks.py says why).


@cache
def _run_lock_sql() -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    runs = quote_name(Run._meta.db_table)
    return f"SELECT {columns(Run, 'r')} FROM {runs} r WHERE r.id = %s{lock}"


@cache
def _next_run_sql() -> str:
    return (
        f"SELECT id, status FROM {quote_name(Run._meta.db_table)} WHERE conversation_id = %s "
        "AND status NOT IN (%s, %s, %s) ORDER BY created_at, id LIMIT 1"
    )


@cache
def _enqueue_next_sql() -> str:
    """The conversation's first unfinished run (``_next_run_sql``), stamped as sent and
    returned if it is queued: its turn has come. Nothing if there is none or it runs."""
    runs = quote_name(Run._meta.db_table)
    return (
        f"WITH n AS ({_next_run_sql()}) UPDATE {runs} SET {column(Run, 'enqueued_at')} = %s "
        f"FROM n WHERE {runs}.id = n.id AND n.status = %s RETURNING {runs}.id"
    )


def run_finish(
    *,
    run_id: uuid.UUID,
    status: RunStatus,
    cause: StopCause,
    error_code: str = "",
    error_message: str = "",
    final_message: str = "",
    claim: int | None = None,
    answer: RunLog | None = None,
) -> bool:
    """End the run exactly once (False if it had already ended) and start the next
    queued run of its conversation. With ``claim`` (the worker's ``Run.claims`` token),
    only while that worker still holds the run: one whose run was taken over by another
    worker must not end it under that worker. A worker's run succeeds only over a history
    the database holds whole (``_WHOLE_HISTORY``); otherwise nothing is written, False is
    returned, and the run is still the worker's to resume from what is stored.

    ``answer``: the run's log with its last step staged, not written: the answer (its
    assistant message, model call, events and the run's counters). On PostgreSQL it is
    written by the finish's statement, so the answer and the run's end are stored
    together or not at all; elsewhere it is written first.

    On PostgreSQL this is the finish's one statement, which ends the run only if it has
    not ended yet: no lock, read or commit of its own at the end of every run."""
    whole = claim is not None and status == RunStatus.SUCCEEDED
    outcome = {
        "status": status,
        "cause": cause,
        "error_code": error_code,
        "error_message": error_message,
        "final_message": final_message,
    }
    if answer is not None and not _writable_with_finish(answer):
        if not answer.batch.write():  # the run was claimed by another worker
            return False
        answer = None
    if connection.vendor == "postgresql":
        conversation_id = _write_finish(
            run_id, _finished_fields(**outcome), claim=claim, whole=whole, answer=answer
        )
        if conversation_id is None:
            return False
        _start_next_after_commit(conversation_id)
        observability.run_finished(run_id, status=status, error_code=error_code)
        return True
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_run_lock_sql(), [uuid_param(run_id)])
            row = cursor.fetchone()
        if row is None:
            return False
        run, _ = from_row(Run, row)
        if run.status in RunStatus.finished() or claim not in (None, run.claims):
            return False
        if whole and not history_whole(run_id=run_id):
            return False
        finish_locked(run, **outcome)
        return True


def _writable_with_finish(answer: RunLog) -> bool:
    """Whether the finish's statement can write ``answer``'s staged step: on PostgreSQL,
    and when the step does not update the run's conversation, which the finish updates
    too (the run's counters the finish sets itself)."""
    staged = answer.batch.updated_rows
    return (
        connection.vendor == "postgresql" and (Conversation, answer.conversation.pk) not in staged
    )


# A run's usage, added to its conversation's totals when it finishes.
_USAGE_TOTALS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost")


# A run's history is whole when its user message is stored, its messages are
# contiguous, each tool call of its assistant messages has a result after it, and its
# last message is an assistant message that calls no tool (the answer). A worker's run
# succeeds only then: a step the database lost (a crash) is redone, never skipped.
_USER_STORED = "EXISTS (SELECT 1 FROM {m} u WHERE u.run_id = %s AND u.role = 'user') "
_CALLS_ANSWERED = (
    "NOT EXISTS (SELECT 1 FROM {m} a CROSS JOIN LATERAL jsonb_array_elements("
    "CASE jsonb_typeof(a.tool_calls) WHEN 'array' THEN a.tool_calls ELSE '[]' END) c "
    "WHERE a.run_id = %s AND a.role = 'assistant' AND NOT EXISTS (SELECT 1 FROM {m} t "
    "WHERE t.run_id = a.run_id AND t.role = 'tool' AND t.seq > a.seq "
    "AND t.tool_call_id = c.value ->> 'id')) "
)
_WHOLE_HISTORY = (
    _USER_STORED
    + "AND (SELECT count(*) = max(seq) - min(seq) + 1 FROM {m} WHERE run_id = %s) AND "
    + _CALLS_ANSWERED
    + "AND EXISTS (SELECT 1 FROM {m} l WHERE l.run_id = %s AND l.role = 'assistant' "
    "AND l.tool_calls IN ('[]', 'null') "
    "AND l.seq = (SELECT max(seq) FROM {m} WHERE run_id = %s))"
)
_WHOLE_HISTORY_PARAMS = _WHOLE_HISTORY.count("%s")
# The same, for a finish that writes the answer in its own statement (which cannot see
# that row): whole but for the answer, whose seq (less one, the parameter) is the run's
# last stored message's.
_WHOLE_BEFORE_ANSWER = (
    _USER_STORED + "AND (SELECT count(*) = max(seq) - min(seq) + 1 AND max(seq) = %s FROM {m} "
    "WHERE run_id = %s) AND " + _CALLS_ANSWERED
)


def history_whole(*, run_id: uuid.UUID) -> bool:
    """Whether the database holds the run's history whole (``_WHOLE_HISTORY``)."""
    with connection.cursor() as cursor:
        cursor.execute(_whole_history_sql(), [uuid_param(run_id)] * _WHOLE_HISTORY_PARAMS)
        return cursor.fetchone() is not None


def run_held(*, run_id: uuid.UUID, claim: int) -> bool:
    """Whether the run is running under the claim token ``claim``."""
    return Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, claims=claim).exists()


@cache
def _whole_history_sql() -> str:
    """SELECT a row when the run's history is whole (the check on its own; SQLite reads
    JSON with its own functions)."""
    m = quote_name(Message._meta.db_table)
    if connection.vendor == "postgresql":
        return f"SELECT 1 WHERE {_WHOLE_HISTORY.format(m=m)}"
    return (
        f"SELECT 1 WHERE EXISTS (SELECT 1 FROM {m} u WHERE u.run_id = %s AND u.role = 'user') "
        f"AND (SELECT count(*) = max(seq) - min(seq) + 1 FROM {m} WHERE run_id = %s) "
        f"AND NOT EXISTS (SELECT 1 FROM {m} a, json_each(a.tool_calls) c "
        "WHERE a.run_id = %s AND a.role = 'assistant' AND NOT EXISTS (SELECT 1 FROM "
        f"{m} t WHERE t.run_id = a.run_id AND t.role = 'tool' AND t.seq > a.seq "
        "AND t.tool_call_id = json_extract(c.value, '$.id'))) "
        f"AND EXISTS (SELECT 1 FROM {m} l WHERE l.run_id = %s AND l.role = 'assistant' "
        "AND json_array_length(l.tool_calls) = 0 "
        f"AND l.seq = (SELECT max(seq) FROM {m} WHERE run_id = %s))"
    )


@cache
def _finish_sql(*, claimed: bool, whole_history: bool = False, answered: bool = False) -> str:
    """``_write_finish``'s statement. Its event takes the run's next sequence number.
    ``claimed``: only while the run's claims are the given token; ``whole_history``: only
    over a whole history (``_WHOLE_HISTORY``). ``answered``: the start of a statement that
    also writes the run's answer step, whose writes the caller adds as CTEs (each only if
    ``fence`` has a row: the run was ended now), with the ``run.finished`` event among
    them; the run's counters are set with its end, and the history is whole with the
    answer (``_WHOLE_BEFORE_ANSWER``)."""
    runs, conversations, events = (
        quote_name(m._meta.db_table) for m in (Run, Conversation, RunEvent)
    )
    names = _FINISHED_FIELDS + (RUN_COUNTERS if answered else ())
    assignments = ", ".join(f"{column(Run, name)} = %s" for name in names)
    usage = [column(Run, name) for name in _USAGE_TOTALS]  # named alike on both models
    totals = ", ".join(f"{column} = c.{column} + f.{column}" for column in usage)
    whole = (_WHOLE_BEFORE_ANSWER if answered else _WHOLE_HISTORY).format(
        m=quote_name(Message._meta.db_table)
    )
    head = (
        f"WITH f AS (UPDATE {runs} SET {assignments} WHERE id = %s AND status NOT IN (%s, %s, %s) "
        f"{'AND claims = %s ' if claimed else ''}"
        f"{f'AND {whole} ' if whole_history else ''}"
        f"RETURNING id, conversation_id, {', '.join(usage)}), "
        f"c AS (UPDATE {conversations} c SET {totals}, updated_at = %s FROM f "
        "WHERE c.id = f.conversation_id)"
    )
    if answered:
        return f"{head}, fence AS MATERIALIZED (SELECT 1 FROM f)"
    return (
        f"{head}, e AS (INSERT INTO {events} (run_id, seq, type, data, created_at) SELECT f.id, "
        f"COALESCE((SELECT max(seq) FROM {events} WHERE run_id = f.id), 0) + 1, %s, %s, %s "
        "FROM f) "
        "SELECT conversation_id FROM f"
    )


def _finished_event(fields: dict) -> run_log.Event:
    return run_log.run_finished(
        status=fields["status"], stop_cause=fields["stop_cause"], error_code=fields["error_code"]
    )


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
    now = timezone.now()
    stale = now - timedelta(seconds=settings.ADSTUDIO_RUN_STALE_AFTER)
    waiting = now - timedelta(seconds=settings.ADSTUDIO_QUEUED_RUN_GRACE)
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
