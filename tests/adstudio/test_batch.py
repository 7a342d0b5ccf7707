"""``Batch``: a step's inserts and updates written as one statement, all or nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from adstudio.db import Add, Batch, WriteConflict
from conversations.models import Conversation, Message, Run, RunEvent
from drafts.models import Ad

pytestmark = pytest.mark.django_db


@pytest.fixture
def run() -> Run:
    owner = User.objects.create_user("batch-owner")
    ad = Ad.objects.create(owner=owner, title="t", client="c", language="en", duration_s=30)
    return Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")


def test_rows_of_several_models_and_updates_are_one_statement(run):
    batch = Batch()
    batch.insert(Message(conversation=run.conversation, run=run, seq=1, role="user", text="a"))
    batch.insert(*(RunEvent(run=run, seq=n, type="text", data={"n": n}) for n in (1, 2, 3)))
    batch.insert(Message(conversation=run.conversation, run=run, seq=2, role="assistant"))
    batch.update(Run, run.pk, rounds=4, cost=Add(Decimal("0.25")), model="m")
    batch.update(Conversation, run.conversation_id, prompt_tokens=Add(10))

    with CaptureQueriesContext(connection) as queries:
        batch.write()

    assert len(queries) == 1
    assert not batch
    messages = list(Message.objects.filter(run=run).order_by("id"))
    # One INSERT per model, its rows in the order they were staged.
    assert [(m.seq, m.role) for m in messages] == [(1, "user"), (2, "assistant")]
    assert all(m.created_at is not None for m in messages)
    events = RunEvent.objects.filter(run=run).order_by("id")
    assert [e.data for e in events] == [{"n": 1}, {"n": 2}, {"n": 3}]
    run.refresh_from_db()
    assert (run.rounds, run.cost, run.model) == (4, Decimal("0.25"), "m")
    run.conversation.refresh_from_db()
    assert run.conversation.prompt_tokens == 10


def test_add_adds_to_the_current_value(run):
    Run.objects.filter(pk=run.pk).update(prompt_tokens=100)
    batch = Batch()
    batch.update(Run, run.pk, prompt_tokens=Add(23))
    batch.write()
    run.refresh_from_db()
    assert run.prompt_tokens == 123


def test_a_failing_write_writes_nothing_of_the_batch(run):
    RunEvent.objects.create(run=run, seq=2, type="text")
    batch = Batch()
    batch.insert(Message(conversation=run.conversation, run=run, seq=1, role="user", text="a"))
    batch.insert(RunEvent(run=run, seq=2, type="text"))  # taken: run_event_unique_seq
    batch.update(Run, run.pk, rounds=9)

    with pytest.raises(IntegrityError, match="run_event_unique_seq"), transaction.atomic():
        batch.write()

    assert not Message.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert run.rounds == 0


def test_a_row_updated_twice_in_one_batch_is_refused(run):
    # PostgreSQL would apply only one of two changes to a row in one statement.
    batch = Batch()
    batch.update(Run, run.pk, rounds=1)
    with pytest.raises(ValueError, match="already updated"):
        batch.update(Run, run.pk, model="m")


def test_clear_drops_what_was_staged(run):
    batch = Batch()
    batch.insert(RunEvent(run=run, seq=1, type="text"))
    batch.update(Run, run.pk, rounds=1)
    batch.clear()
    batch.update(Run, run.pk, rounds=2)  # no longer a second update of the row
    batch.write()
    assert not RunEvent.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert run.rounds == 2


def test_rollback_to_a_mark_drops_only_what_was_staged_after_it(run):
    batch = Batch()
    batch.insert(Message(conversation=run.conversation, run=run, seq=1, role="assistant"))
    batch.insert(RunEvent(run=run, seq=1, type="text", data={"kept": True}))
    batch.update(Run, run.pk, rounds=1)
    mark = batch.mark()
    batch.insert(Message(conversation=run.conversation, run=run, seq=2, role="tool"))
    batch.insert(RunEvent(run=run, seq=2, type="text"))
    batch.insert(Ad(owner=run.conversation.ad.owner, title="dropped", language="en"))
    batch.update(Conversation, run.conversation_id, prompt_tokens=Add(5))

    batch.rollback_to(mark)
    batch.update(Conversation, run.conversation_id, prompt_tokens=Add(7))  # no longer twice
    with pytest.raises(ValueError, match="already updated"):
        batch.update(Run, run.pk, rounds=2)  # staged before the mark: still there
    batch.write()

    assert list(Message.objects.filter(run=run).values_list("seq", "role")) == [(1, "assistant")]
    assert list(RunEvent.objects.filter(run=run).values_list("data", flat=True)) == [{"kept": True}]
    assert not Ad.objects.filter(title="dropped").exists()
    run.refresh_from_db()
    run.conversation.refresh_from_db()
    assert (run.rounds, run.conversation.prompt_tokens) == (1, 7)


def test_a_refused_write_keeps_what_was_staged_for_a_rollback_and_a_second_write(run):
    RunEvent.objects.create(run=run, seq=2, type="text")
    batch = Batch()
    batch.insert(Message(conversation=run.conversation, run=run, seq=1, role="assistant"))
    mark = batch.mark()
    batch.insert(RunEvent(run=run, seq=2, type="text"))  # taken: run_event_unique_seq

    with pytest.raises(WriteConflict, match="run_event_unique_seq"), transaction.atomic():
        batch.write()
    assert batch  # nothing was written, nothing dropped
    batch.rollback_to(mark)
    batch.write()

    assert not batch
    assert list(Message.objects.filter(run=run).values_list("seq", flat=True)) == [1]
    assert RunEvent.objects.filter(run=run).count() == 1


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_batch_commits_durably(run):
    """A step the database acknowledged survives its crash: nothing turns the wait for
    the disk off, in the batch's statement or in its transaction."""
    with transaction.atomic():
        batch = Batch()
        batch.update(Run, run.pk, rounds=2)
        batch.write()
        assert _synchronous_commit() == "on"
    run.refresh_from_db()
    assert run.rounds == 2
