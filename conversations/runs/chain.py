"""The next queued run of a conversation, sent when the one before it ends."""

from __future__ import annotations

import logging
import uuid
from functools import cache

from django.db import connection, transaction

from adstudio.db.clock import now_sql
from adstudio.db.sql import column, columns, quote_name, uuid_param
from conversations.models import Run, RunStatus
from conversations.runs.enqueue import run_enqueue

logger = logging.getLogger(__name__)


def start_next_after_commit(conversation_id: uuid.UUID) -> None:
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
                RunStatus.QUEUED,
            ],
        )
        following = cursor.fetchone()
    if following is not None:
        run_enqueue(run_id=Run._meta.pk.to_python(following[0]))


# The hot statements of a run's finish are plain SQL: compiling their querysets cost
# more than running them. A conversation's next run is found among its runs "not
# finished", through the conversation's index (conversations/runs/locks.py says why).


@cache
def run_lock_sql() -> str:
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
        f"WITH n AS ({_next_run_sql()}) UPDATE {runs} "
        f"SET {column(Run, 'enqueued_at')} = {now_sql()} "
        f"FROM n WHERE {runs}.id = n.id AND n.status = %s RETURNING {runs}.id"
    )
