"""A run finished exactly once, over a whole history: its answer, its end and its last
event in one statement, only while its worker holds it."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from functools import cache

from django.db import connection, transaction
from django.utils import timezone

from adstudio import observability
from adstudio.db.batch import Add, Batch, fenced_writes
from adstudio.db.clock import now_sql
from adstudio.db.sql import column, from_row, prep, quote_name, uuid_param
from conversations.models import Conversation, Message, Run, RunEvent, RunStatus, StopCause
from conversations.record import log as run_log
from conversations.record.log import RUN_COUNTERS, EventLog, RunLog
from conversations.runs.chain import run_lock_sql, start_next_after_commit

logger = logging.getLogger(__name__)

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
        _, fields["finished_at"] = _write_finish(run.pk, fields)  # the database's time
    else:
        _write_finish_in_steps(run, fields)
    for name, value in fields.items():
        setattr(run, name, value)
    start_next_after_commit(run.conversation_id)
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
) -> tuple[uuid.UUID | None, datetime | None]:
    """Write the finish in one statement (PostgreSQL): the run, its usage added to its
    conversation's totals (whose ``updated_at`` is its last activity) and its
    ``run.finished`` event, all at the database's time; with ``answer``, its staged step
    too (``run_finish``). Returns the run's conversation and its ``finished_at``, or
    Nones when the run had already ended (or, with ``whole``, its history is not whole),
    in which case nothing is written."""
    sql = _finish_sql(claimed=claim is not None, whole_history=whole, answered=answer is not None)
    params = [
        *(prep(Run, name, fields[name]) for name in _FINISHED_FIELDS if name != "finished_at"),
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
    if answer is None:
        finished = _finished_event(fields)
        params += [finished[0], prep(RunEvent, "data", finished[1])]
    else:
        # The step's counters are set by the finish's own UPDATE of the run, and its
        # run.finished event follows the step's events.
        answer.batch.pop_update(Run, run_id)
        answer.event(_finished_event(fields))
        ctes, write_params = fenced_writes(answer.batch.statements(fenced=True))
        sql = f"{sql}, {ctes} SELECT conversation_id, finished_at FROM f"
        params += write_params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if answer is not None:
        answer.batch.clear()
    if row is None:
        return None, None
    return Conversation._meta.pk.to_python(row[0]), row[1]


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
        conversation_id, _ = _write_finish(
            run_id, _finished_fields(**outcome), claim=claim, whole=whole, answer=answer
        )
        if conversation_id is None:
            return False
        start_next_after_commit(conversation_id)
        observability.run_finished(run_id, status=status, error_code=error_code)
        return True
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(run_lock_sql(), [uuid_param(run_id)])
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
    now = now_sql()  # the database's time, whichever host's worker ends the run
    assignments = ", ".join(
        f"{column(Run, name)} = {now if name == 'finished_at' else '%s'}" for name in names
    )
    usage = [column(Run, name) for name in _USAGE_TOTALS]  # named alike on both models
    totals = ", ".join(f"{column} = c.{column} + f.{column}" for column in usage)
    whole = (_WHOLE_BEFORE_ANSWER if answered else _WHOLE_HISTORY).format(
        m=quote_name(Message._meta.db_table)
    )
    head = (
        f"WITH f AS (UPDATE {runs} SET {assignments} WHERE id = %s AND status NOT IN (%s, %s, %s) "
        f"{'AND claims = %s ' if claimed else ''}"
        f"{f'AND {whole} ' if whole_history else ''}"
        f"RETURNING id, conversation_id, finished_at, {', '.join(usage)}), "
        f"c AS (UPDATE {conversations} c SET {totals}, updated_at = {now} FROM f "
        "WHERE c.id = f.conversation_id)"
    )
    if answered:
        return f"{head}, fence AS MATERIALIZED (SELECT 1 FROM f)"
    return (
        f"{head}, e AS (INSERT INTO {events} (run_id, seq, type, data, created_at) SELECT f.id, "
        f"COALESCE((SELECT max(seq) FROM {events} WHERE run_id = f.id), 0) + 1, %s, %s, {now} "
        "FROM f) "
        "SELECT conversation_id, finished_at FROM f"
    )


def _finished_event(fields: dict) -> run_log.Event:
    return run_log.run_finished_event(
        status=fields["status"], stop_cause=fields["stop_cause"], error_code=fields["error_code"]
    )
