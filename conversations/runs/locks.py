"""Row locks for the Conversation aggregate.

A run is claimed, requeued or cancelled under its own row lock and its conversation's,
taken in that order by one statement, so runs of one conversation are serialised while
different conversations never wait on each other.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache

from django.db import connection

from adstudio.db.sql import columns, from_row, quote_name, uuid_param
from conversations.models import Conversation, Run, RunStatus
from drafts.models import Ad


@dataclass(frozen=True)
class LockedRun:
    run: Run  # with its conversation and ad
    after_unfinished: bool  # an earlier run of its conversation has not finished


def run_lock(*, run_id: uuid.UUID) -> LockedRun | None:
    """The run with its conversation and ad, its row and its conversation's row locked,
    and whether an earlier run of the conversation is unfinished; None if there is no
    such run. Must be called inside ``transaction.atomic()``."""
    with connection.cursor() as cursor:
        cursor.execute(_lock_sql(), [*after_unfinished_params(), uuid_param(run_id)])
        row = cursor.fetchone()
    if row is None:
        return None
    run, at = from_row(Run, row)
    conversation, at = from_row(Conversation, row, at)
    conversation.ad, at = from_row(Ad, row, at)
    run.conversation = conversation
    return LockedRun(run=run, after_unfinished=bool(row[at]))


# Plain SQL: a run's claim takes this lock, and compiling the queryset cost more than
# running it. A conversation's unfinished runs are found as "not finished", through the
# conversation's index, so that PostgreSQL cannot use the partial index of unfinished
# runs instead: every run passes through that index twice, and between vacuums its dead
# entries, which a bitmap scan reads and never prunes, far outnumber the live ones.
@cache
def after_unfinished_sql() -> str:
    """Whether an earlier run of run ``r``'s conversation is unfinished (or one is running):
    a condition on ``r``; its parameters are ``after_unfinished_params()``."""
    return (
        f"EXISTS (SELECT 1 FROM {quote_name(Run._meta.db_table)} e "
        "WHERE e.conversation_id = r.conversation_id "
        "AND e.status NOT IN (%s, %s, %s) AND e.id <> r.id AND (e.status = %s "
        "OR e.created_at < r.created_at OR (e.created_at = r.created_at AND e.id < r.id)))"
    )


def after_unfinished_params() -> list:
    return [*RunStatus.finished(), RunStatus.RUNNING]


@cache
def _lock_sql() -> str:
    runs, conversations, ads = (quote_name(m._meta.db_table) for m in (Run, Conversation, Ad))
    lock = " FOR UPDATE OF r, c" if connection.features.has_select_for_update_of else ""
    after_unfinished = after_unfinished_sql()
    return (
        f"SELECT {columns(Run, 'r')}, {columns(Conversation, 'c')}, {columns(Ad, 'a')}, "
        f"{after_unfinished} FROM {runs} r "
        f"JOIN {conversations} c ON c.id = r.conversation_id JOIN {ads} a ON a.id = c.ad_id "
        f"WHERE r.id = %s{lock}"
    )
