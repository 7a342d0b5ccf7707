"""Writes of the conversations app: starting a generation, sending a message, claiming,
finishing, cancelling and recovering runs, and appending messages and events.

A run is saved (with the user's text) before its task is enqueued, and enqueued only when
that transaction commits: the user's message is never lost, and a task never looks for a
row that isn't there yet.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Model, Q
from django.utils import timezone

from adstudio.db import Add, Batch, columns, from_row, quote_name
from conversations import providers
from conversations.models import (
    Conversation,
    Message,
    Run,
    RunEvent,
    RunEventType,
    RunStatus,
    StopCause,
)
from conversations.prompts import brief_message
from drafts.models import Ad

logger = logging.getLogger(__name__)

ENQUEUE_FAILED = "enqueue_failed"


def conversation_create(*, ad: Ad, provider: str | None = None) -> Conversation:
    return Conversation.objects.create(ad=ad, provider=provider or "")


def start_generation(
    *,
    ad: Ad,
    provider: str | None = None,
    request_text: str = "",
    conversation: Conversation | None = None,
    requested_by=None,
    idempotency_key: str = "",
    idempotency_fingerprint: str = "",
) -> Run:
    """Queue the first turn of a conversation about ``ad``: the brief as its user message.

    With ``conversation`` the brief is sent into that (existing) conversation instead.
    An explicitly requested provider must be configured (``ProviderUnavailable``).
    """
    if provider:
        providers.route(language=ad.language, market=ad.market, requested=provider)
    # No savepoint: inside a caller's transaction (the API's) this is part of its unit of
    # work, so an error rolls back the whole of it; alone, it is a transaction of its own.
    with transaction.atomic(savepoint=False):
        if conversation is None:
            conversation = conversation_create(ad=ad, provider=provider)
        return _run_create(
            conversation=conversation,
            text=brief_message(ad, request_text),
            requested_by=requested_by,
            idempotency_key=idempotency_key,
            idempotency_fingerprint=idempotency_fingerprint,
        )


def send_message(
    *,
    conversation: Conversation,
    text: str,
    requested_by=None,
    idempotency_key: str = "",
    idempotency_fingerprint: str = "",
) -> Run:
    """Queue a user turn ("make the music more upbeat") in an existing conversation.

    One INSERT, so it needs no transaction of its own: outside one, the task is enqueued
    as soon as the row is in."""
    return _run_create(
        conversation=conversation,
        text=text,
        requested_by=requested_by,
        idempotency_key=idempotency_key,
        idempotency_fingerprint=idempotency_fingerprint,
    )


def _run_create(
    *,
    conversation: Conversation,
    text: str,
    requested_by,
    idempotency_key: str,
    idempotency_fingerprint: str,
) -> Run:
    run = Run.objects.create(
        conversation=conversation,
        input_text=text,
        requested_by=requested_by,
        idempotency_key=idempotency_key,
        idempotency_fingerprint=idempotency_fingerprint,
    )
    run_enqueue(run_id=run.pk)
    return run


class IdempotencyKeyReused(Exception):
    """The key already started a run for a different request."""


def run_once_per_key(
    *,
    requested_by,
    idempotency_key: str,
    start: Callable[[], Run],
    fingerprint: str = "",
) -> tuple[Run, bool]:
    """``start()`` a run unless this user already started one with this key; returns
    ``(run, created)``. Two racing requests with one key end with one run: the loser's
    whole transaction (ad, conversation, run) rolls back on the unique constraint
    ``run_unique_idempotency_key``. ``start`` stores ``fingerprint``, the request's
    digest, with the run: the key sent again with another request raises
    ``IdempotencyKeyReused`` rather than answer it with a run it did not ask for.

    ``start`` makes its own writes atomic; without a key it is simply called, so that a
    chat message costs one INSERT, not a transaction around it."""
    if not idempotency_key:
        return start(), True
    keyed = Run.objects.filter(requested_by=requested_by, idempotency_key=idempotency_key)
    run = keyed.first()
    if run is None:
        try:
            with transaction.atomic():
                return start(), True
        except IntegrityError:
            # The constraint's name is in PostgreSQL's message, not in SQLite's: whether
            # a racing request's run now holds the key is the test that works on both.
            run = keyed.first()
            if run is None:
                raise
    if run.idempotency_fingerprint and run.idempotency_fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency-Key {idempotency_key!r} was already used for a different request."
        )
    return run, False


def run_enqueue(*, run_id: uuid.UUID) -> None:
    """Send the run's task once the current transaction commits.

    If the broker is down, the run stays queued with ``error_code=enqueue_failed`` and
    the recovery sweep enqueues it later; the caller's request does not fail.
    """

    def send() -> None:
        from conversations.tasks import run_agent_task

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


def _is_fresh(run: Run, now) -> bool:
    stale_after = timedelta(seconds=settings.ADSTUDIO_RUN_STALE_AFTER)
    return run.heartbeat_at is not None and now - run.heartbeat_at < stale_after


@dataclass
class Claim:
    """A run taken by this worker, with its event log and whether it is being cancelled."""

    run: Run
    events: EventLog
    cancel_requested: bool
    resumed: bool = False  # claimed before: it continues from what is stored


_CLAIMED_FIELDS = (
    "status",
    "started_at",
    "heartbeat_at",
    "error_code",
    "error_message",
    "claims",
)


@dataclass(frozen=True)
class _LockedRun:
    run: Run  # with its conversation and ad
    after_unfinished: bool  # an earlier run of its conversation has not finished


def _lock_with_conversation(run_id: uuid.UUID) -> _LockedRun | None:
    """The run with its conversation and ad, its row and its conversation's row locked,
    and whether an earlier run of the conversation is unfinished: one statement, so every
    caller takes the two locks in the same order."""
    with connection.cursor() as cursor:
        cursor.execute(_lock_sql(), [*RunStatus.finished(), RunStatus.RUNNING, _uuid(run_id)])
        row = cursor.fetchone()
    if row is None:
        return None
    run, at = from_row(Run, row)
    conversation, at = from_row(Conversation, row, at)
    conversation.ad, at = from_row(Ad, row, at)
    run.conversation = conversation
    return _LockedRun(run=run, after_unfinished=bool(row[at]))


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
    """
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_with_conversation(run_id)
        if locked is None:
            return None
        run = locked.run
        if run.status in RunStatus.finished():
            return None
        if run.status == RunStatus.QUEUED and run.cancel_requested:
            _finish(run, status=RunStatus.CANCELLED, cause=StopCause.CANCELLED)
            return None
        if holder is not None and (run.status != RunStatus.RUNNING or run.claims != holder):
            return None
        if run.status == RunStatus.RUNNING and _is_fresh(run, now) and holder is None:
            return None
        if locked.after_unfinished:
            return None
        # A run has events from before if it was ever claimed: a stuck one taken over,
        # or a failed or stuck one that staff requeued. Those continue their numbering.
        resumed = run.status == RunStatus.RUNNING or run.started_at is not None
        run.status = RunStatus.RUNNING
        run.started_at = run.started_at or now
        run.heartbeat_at = now
        run.claims += 1  # this worker's token: a later claim makes it stale
        if run.error_code == ENQUEUE_FAILED:
            run.error_code, run.error_message = "", ""
        events = EventLog(run, next_seq=None if resumed else 1)
        writes = Batch()
        writes.update(Run, run.pk, **{f: getattr(run, f) for f in _CLAIMED_FIELDS})
        writes.insert(*events.numbered((RunEventType.RUN_STARTED, {"resumed": resumed})))
        writes.write()
        return Claim(run=run, events=events, cancel_requested=run.cancel_requested, resumed=resumed)


class EventLog:
    """Appends a run's progress events with consecutive sequence numbers.

    Only the worker holding the run writes its events, so the next number is read once
    (or known, for a new run) and then counted locally; the unique (run, seq) constraint
    is the backstop.
    """

    def __init__(self, run: Run, *, next_seq: int | None = None) -> None:
        self.run = run
        self._next = next_seq

    def append(self, *events: tuple[RunEventType, dict]) -> list[RunEvent]:
        """Write ``events`` now."""
        rows = self.numbered(*events)
        return RunEvent.objects.bulk_create(rows) if rows else []

    def numbered(self, *events: tuple[RunEventType, dict]) -> list[RunEvent]:
        """The next rows of the log, for the caller to write (with other rows of a step)."""
        if not events:
            return []
        if self._next is None:
            last = (
                RunEvent.objects.filter(run=self.run)
                .order_by("-seq")
                .values_list("seq", flat=True)
                .first()
            )
            self._next = (last or 0) + 1
        rows = [
            RunEvent(run=self.run, seq=self._next + i, type=type, data=data)
            for i, (type, data) in enumerate(events)
        ]
        self._next += len(rows)
        return rows


_FINISHED_FIELDS = (
    "status",
    "stop_cause",
    "error_code",
    "error_message",
    "final_message",
    "finished_at",
)


def _finish(run: Run, **outcome) -> None:
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


def _finished_event(fields: dict) -> dict:
    return {
        "status": fields["status"],
        "stopCause": fields["stop_cause"],
        "errorCode": fields["error_code"],
    }


def _write_finish(
    run_id: uuid.UUID, fields: dict, *, claim: int | None = None, whole: bool = False
) -> uuid.UUID | None:
    """Write the finish in one statement (PostgreSQL): the run, its usage added to its
    conversation's totals (whose ``updated_at`` is its last activity) and its
    ``run.finished`` event. Returns the run's conversation, or None when the run had
    already ended (or, with ``whole``, its history is not whole), in which case nothing
    is written."""
    now = fields["finished_at"]
    with connection.cursor() as cursor:
        cursor.execute(
            _finish_sql(held=claim is not None, whole=whole),
            [
                *(_prep(Run, name, fields[name]) for name in _FINISHED_FIELDS),
                _uuid(run_id),
                *RunStatus.finished(),
                *([claim] if claim is not None else []),
                *([_uuid(run_id)] * _WHOLE_HISTORY_PARAMS if whole else []),
                _prep(Conversation, "updated_at", now),
                RunEventType.RUN_FINISHED,
                _prep(RunEvent, "data", _finished_event(fields)),
                _prep(RunEvent, "created_at", now),
            ],
        )
        row = cursor.fetchone()
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
    writes.insert(*EventLog(run).numbered((RunEventType.RUN_FINISHED, _finished_event(fields))))
    writes.write()


def _start_next_after_commit(conversation_id: uuid.UUID) -> None:
    # Looked up once the finish is committed: a run queued meanwhile is then either found
    # there or sees this one finished when its own task claims it.
    transaction.on_commit(lambda: _enqueue_next(conversation_id=conversation_id))


def _enqueue_next(*, conversation_id: uuid.UUID) -> None:
    """Start the conversation's next run, when it is waiting for its turn."""
    with connection.cursor() as cursor:
        cursor.execute(_next_run_sql(), [_uuid(conversation_id), *RunStatus.finished()])
        following = cursor.fetchone()
    if following is not None and following[1] == RunStatus.QUEUED:
        run_enqueue(run_id=Run._meta.pk.to_python(following[0]))


# The hot statements of a run's claim and finish are plain SQL: compiling their querysets
# cost more than running them. A conversation's unfinished runs are found as "not
# finished", through the conversation's index, so that PostgreSQL cannot use the partial
# index of unfinished runs instead: every run passes through that index twice, and between
# vacuums its dead entries, which a bitmap scan reads and never prunes, far outnumber the
# live ones.


@cache
def _lock_sql() -> str:
    runs, conversations, ads = (quote_name(m._meta.db_table) for m in (Run, Conversation, Ad))
    lock = " FOR UPDATE OF r, c" if connection.features.has_select_for_update_of else ""
    after_unfinished = (
        f"EXISTS (SELECT 1 FROM {runs} e WHERE e.conversation_id = r.conversation_id "
        "AND e.status NOT IN (%s, %s, %s) AND e.id <> r.id AND (e.status = %s "
        "OR e.created_at < r.created_at OR (e.created_at = r.created_at AND e.id < r.id)))"
    )
    return (
        f"SELECT {columns(Run, 'r')}, {columns(Conversation, 'c')}, {columns(Ad, 'a')}, "
        f"{after_unfinished} FROM {runs} r "
        f"JOIN {conversations} c ON c.id = r.conversation_id JOIN {ads} a ON a.id = c.ad_id "
        f"WHERE r.id = %s{lock}"
    )


@cache
def _run_lock_sql() -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    runs = quote_name(Run._meta.db_table)
    return f"SELECT {columns(Run, 'r')} FROM {runs} r WHERE r.id = %s{lock}"


def _uuid(value: uuid.UUID):
    """A run's or a conversation's id as a parameter of plain SQL."""
    return Run._meta.pk.get_db_prep_value(value, connection)


@cache
def _next_run_sql() -> str:
    return (
        f"SELECT id, status FROM {quote_name(Run._meta.db_table)} WHERE conversation_id = %s "
        "AND status NOT IN (%s, %s, %s) ORDER BY created_at, id LIMIT 1"
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
) -> bool:
    """End the run exactly once (False if it had already ended) and start the next
    queued run of its conversation. With ``claim`` (the worker's ``Run.claims`` token),
    only while that worker still holds the run: one whose run was taken over by another
    worker must not end it under that worker. A worker's run succeeds only over a history
    the database holds whole (``_WHOLE_HISTORY``); otherwise nothing is written, False is
    returned, and the run is still the worker's to resume from what is stored.

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
    if connection.vendor == "postgresql":
        conversation_id = _write_finish(
            run_id, _finished_fields(**outcome), claim=claim, whole=whole
        )
        if conversation_id is None:
            return False
        _start_next_after_commit(conversation_id)
        return True
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_run_lock_sql(), [_uuid(run_id)])
            row = cursor.fetchone()
        if row is None:
            return False
        run, _ = from_row(Run, row)
        if run.status in RunStatus.finished() or claim not in (None, run.claims):
            return False
        if whole and not history_whole(run_id=run_id):
            return False
        _finish(run, **outcome)
        return True


def _prep(model: type[Model], name: str, value):
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def _column(model: type[Model], name: str) -> str:
    return quote_name(model._meta.get_field(name).column)


# A run's usage, added to its conversation's totals when it finishes.
_USAGE_TOTALS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost")


# A run's history is whole when its user message is stored, its messages are
# contiguous, each tool call of its assistant messages has a result after it, and its
# last message is an assistant message that calls no tool (the answer). A worker's run
# succeeds only then: a step the database lost (a crash) is redone, never skipped.
_WHOLE_HISTORY = (
    "EXISTS (SELECT 1 FROM {m} u WHERE u.run_id = %s AND u.role = 'user') "
    "AND (SELECT count(*) = max(seq) - min(seq) + 1 FROM {m} WHERE run_id = %s) "
    "AND NOT EXISTS (SELECT 1 FROM {m} a CROSS JOIN LATERAL jsonb_array_elements("
    "CASE jsonb_typeof(a.tool_calls) WHEN 'array' THEN a.tool_calls ELSE '[]' END) c "
    "WHERE a.run_id = %s AND a.role = 'assistant' AND NOT EXISTS (SELECT 1 FROM {m} t "
    "WHERE t.run_id = a.run_id AND t.role = 'tool' AND t.seq > a.seq "
    "AND t.tool_call_id = c.value ->> 'id')) "
    "AND EXISTS (SELECT 1 FROM {m} l WHERE l.run_id = %s AND l.role = 'assistant' "
    "AND l.tool_calls IN ('[]', 'null') "
    "AND l.seq = (SELECT max(seq) FROM {m} WHERE run_id = %s))"
)
_WHOLE_HISTORY_PARAMS = _WHOLE_HISTORY.count("%s")


def history_whole(*, run_id: uuid.UUID) -> bool:
    """Whether the database holds the run's history whole (``_WHOLE_HISTORY``)."""
    with connection.cursor() as cursor:
        cursor.execute(_whole_history_sql(), [_uuid(run_id)] * _WHOLE_HISTORY_PARAMS)
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
def _finish_sql(*, held: bool, whole: bool = False) -> str:
    """``_write_finish``'s statement. Its event takes the run's next sequence number.
    ``held``: only while the run's claims are the given token; ``whole``: only over a
    whole history (``_WHOLE_HISTORY``)."""
    runs, conversations, events = (
        quote_name(m._meta.db_table) for m in (Run, Conversation, RunEvent)
    )
    assignments = ", ".join(f"{_column(Run, name)} = %s" for name in _FINISHED_FIELDS)
    usage = [_column(Run, name) for name in _USAGE_TOTALS]  # named alike on both models
    totals = ", ".join(f"{column} = c.{column} + f.{column}" for column in usage)
    whole_history = _WHOLE_HISTORY.format(m=quote_name(Message._meta.db_table))
    return (
        f"WITH f AS (UPDATE {runs} SET {assignments} WHERE id = %s AND status NOT IN (%s, %s, %s) "
        f"{'AND claims = %s ' if held else ''}"
        f"{f'AND {whole_history} ' if whole else ''}"
        f"RETURNING id, conversation_id, {', '.join(usage)}), "
        f"c AS (UPDATE {conversations} c SET {totals}, updated_at = %s FROM f "
        "WHERE c.id = f.conversation_id), "
        f"e AS (INSERT INTO {events} (run_id, seq, type, data, created_at) SELECT f.id, "
        f"COALESCE((SELECT max(seq) FROM {events} WHERE run_id = f.id), 0) + 1, %s, %s, %s "
        "FROM f) "
        "SELECT conversation_id FROM f"
    )


def run_cancel(*, run: Run) -> Run:
    """Cancel a queued run at once; ask a running one to stop at its next step."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status == RunStatus.QUEUED:
            _finish(run, status=RunStatus.CANCELLED, cause=StopCause.CANCELLED)
        elif run.status == RunStatus.RUNNING and not run.cancel_requested:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
    return run


def run_requeue(*, run: Run) -> bool:
    """Queue a failed run, or one whose worker died, again; it resumes from its last
    persisted step. Returns False for a run that cannot be requeued: succeeded,
    cancelled, running with a live worker, or failed with a later turn of its
    conversation sent since (it would be answered out of order)."""
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_with_conversation(run.pk)
        if locked is None:  # deleted meanwhile
            return False
        run = locked.run
        stuck = run.status == RunStatus.RUNNING and not _is_fresh(run, now)
        if not (run.status in (RunStatus.FAILED, RunStatus.QUEUED) or stuck):
            return False
        if (
            run.status == RunStatus.FAILED
            and Run.objects.filter(
                conversation_id=run.conversation_id, created_at__gt=run.created_at
            ).exists()
        ):
            return False
        if run.status == RunStatus.FAILED:
            # Its usage was added to the conversation when it failed; it is added again,
            # in full, when it finishes this time.
            Conversation.objects.filter(pk=run.conversation_id).update(
                prompt_tokens=F("prompt_tokens") - run.prompt_tokens,
                completion_tokens=F("completion_tokens") - run.completion_tokens,
                cached_tokens=F("cached_tokens") - run.cached_tokens,
                cost=F("cost") - run.cost,
            )
        run.status = RunStatus.QUEUED
        run.heartbeat_at = None
        run.finished_at = None
        run.stop_cause = ""
        run.error_code = ""
        run.error_message = ""
        run.save(
            update_fields=[
                "status",
                "heartbeat_at",
                "finished_at",
                "stop_cause",
                "error_code",
                "error_message",
            ]
        )
        run_enqueue(run_id=run.pk)
        return True


def runs_recover() -> list[uuid.UUID]:
    """Enqueue again the runs whose task vanished: running ones with a stale heartbeat
    (worker killed, deploy) and queued ones waiting longer than the grace period
    (broker outage). Claiming sorts out order and duplicates."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.ADSTUDIO_RUN_STALE_AFTER)
    waiting = now - timedelta(seconds=settings.ADSTUDIO_QUEUED_RUN_GRACE)
    run_ids = list(
        Run.objects.filter(
            Q(status=RunStatus.RUNNING, heartbeat_at__lt=stale)
            | Q(status=RunStatus.RUNNING, heartbeat_at__isnull=True)
            | Q(status=RunStatus.QUEUED, created_at__lt=waiting)
            | Q(status=RunStatus.QUEUED, error_code=ENQUEUE_FAILED)
        )
        .order_by("created_at")
        .values_list("pk", flat=True)
    )
    for run_id in run_ids:
        with transaction.atomic():
            run_enqueue(run_id=run_id)
    if run_ids:
        logger.info("recovery re-enqueued %d run(s)", len(run_ids))
    return run_ids
