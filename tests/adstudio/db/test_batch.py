"""``Batch``: a step's inserts and updates written as one statement, all or nothing."""

from __future__ import annotations

import json
import uuid
import warnings
from datetime import datetime
from decimal import Decimal
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from adstudio.db.batch import (
    Add,
    Batch,
    WriteConflict,
    _as_text,
    _insert_template,
    _nested_json,
    _text_columns,
    new_row,
)
from conversations.models import (
    Conversation,
    Message,
    MessageRole,
    ModelCall,
    Run,
    RunEvent,
    RunStatus,
)
from drafts.models import Ad, Draft
from drafts.services import ad_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def run() -> Run:
    owner = User.objects.create_user("batch-owner")
    ad = ad_create(owner=owner, title="t", client="c", language="en", duration_s=30)
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
    the disk off, in the batch's statement or in its transaction. (The suite's databases
    have it off by default, so the session starts as a production one does.)"""
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO on")
    with transaction.atomic():
        batch = Batch()
        batch.update(Run, run.pk, rounds=2)
        batch.write()
        assert _synchronous_commit() == "on"
    run.refresh_from_db()
    assert run.rounds == 2


# Values of each kind of column the loop writes, the common types and the others that
# Django's preparation converts (a number as text, a naive time, a tuple as JSON).
_SAMPLES = {
    "CharField": ["", "voices", RunStatus.RUNNING, 'ไทย \u2028 "q"', None],
    "TextField": ["", "line\nbreak", None],
    "IntegerField": [0, 7, -3, 2**40, "12", True, None],
    "BooleanField": [True, False, 1, 0, None],
    "UUIDField": [uuid.uuid4(), str(uuid.uuid4()), None],
    "DateTimeField": [
        timezone.now(),
        datetime(2026, 11, 26, 9, 30, tzinfo=ZoneInfo("Asia/Bangkok")),
        datetime(2026, 11, 26, 9, 30),  # naive: Django makes it aware, with a warning
        None,
    ],
    "JSONField": [{}, [], {"a": [1, 2.5, None, "ไทย"]}, ("t", 1), "text", 3, None],
    "DecimalField": [Decimal("0.25"), 1, None],
}


def _kind(field) -> str:
    target = field.target_field if field.is_relation else field
    kind = target.get_internal_type()
    if "IntegerField" in kind or "AutoField" in kind:
        return "IntegerField"
    return kind


@pytest.mark.parametrize("model", [Message, RunEvent, ModelCall, Run, Conversation, Draft])
def test_each_value_is_written_as_the_fields_own_preparation_gives_it(model):
    """``_insert_sql`` reads the common types directly instead of through each field's
    chain of preparation methods: for every column and every kind of value, the text it
    writes is the text of Django's own ``get_db_prep_save``, including where it falls back
    to that chain for a value of another type."""
    db = connections[DEFAULT_DB_ALIAS]
    fields = _insert_template(model)[0]
    compared = 0
    for field, (get, text) in zip(fields, _text_columns(model), strict=True):
        samples = _SAMPLES[_kind(field)]
        for value in samples:
            obj = model()
            setattr(obj, field.attname, value)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the naive time
                written = text(get(obj))  # pre_save may fill the value (auto_now_add)
                expected = _as_text(field.get_db_prep_save(getattr(obj, field.attname), db))
            if _nested_json(field):  # the value itself in the rows' JSON, not its text
                expected = None if expected is None else json.loads(expected)
            assert written == expected, (field.name, value)
            compared += 1
    assert compared >= len(fields) * 2


def test_rows_read_back_as_the_orm_wrote_them(run):
    """A message and an event written by a batch read back like ones the ORM created,
    values of other types than the common ones included."""
    values = {
        "conversation": run.conversation,
        "run_id": str(run.pk),  # a UUID as text
        "role": MessageRole.ASSISTANT,
        "text": 'ไทย "q"\n',
        "tool_calls": [{"id": "c1", "name": "search_voices", "arguments": {"n": 2.5}}],
        "provider_data": {"stopped_by": None},
        "tokens": "12",  # a number as text
        "is_error": 1,
    }
    batch = Batch()
    batch.insert(Message(seq=1, **values))
    batch.insert(RunEvent(run=run, seq=1, type="text", data=("t", 1)))
    batch.write()
    Message.objects.create(seq=2, **values)

    by_batch, by_orm = Message.objects.filter(run=run).order_by("seq")
    for field in Message._meta.concrete_fields:
        if field.name not in ("id", "seq", "created_at"):
            assert getattr(by_batch, field.attname) == getattr(by_orm, field.attname), field.name
    assert (by_batch.tokens, by_batch.is_error) == (12, True)
    assert RunEvent.objects.get(run=run).data == ["t", 1]


def test_json_values_are_stored_as_the_orm_stores_them(run):
    """A JSON column's value goes into the batch's rows as JSON itself: every kind of value
    is stored as the ORM stores it, the same JSON type included (a string stays a string,
    not a document)."""
    samples = [
        {"a": [1, 2.5, None, True, 'ไทย \\ "q" \n']},
        [],
        {},
        "text",
        '{"looks": "like JSON"}',
        3,
        -0.5,
        False,
        ("t", 1),
        {"deep": [[[{"n": 1}]]]},
    ]
    batch = Batch()
    batch.insert(
        *(RunEvent(run=run, seq=n, type="text", data=value) for n, value in enumerate(samples, 1))
    )
    batch.write()
    for n, value in enumerate(samples, len(samples) + 1):
        RunEvent.objects.create(run=run, seq=n, type="text", data=value)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq, data, jsonb_typeof(data) FROM conversations_runevent "
            "WHERE run_id = %s ORDER BY seq",
            [run.pk],
        )
        stored = cursor.fetchall()
    by_batch, by_orm = stored[: len(samples)], stored[len(samples) :]
    assert [row[1:] for row in by_batch] == [row[1:] for row in by_orm]
    assert [row[2] for row in by_batch][3:5] == ["string", "string"]


def _values(obj) -> dict:
    """Every field's value, a random id (``uuid4``) as its type."""
    return {
        f.attname: UUID if f.default is uuid.uuid4 else getattr(obj, f.attname)
        for f in type(obj)._meta.concrete_fields
    }


@pytest.mark.parametrize(
    ("model", "values"),
    [
        (RunEvent, {"run_id": uuid.uuid4(), "seq": 3, "type": "text", "data": {"n": 1}}),
        (Message, {"conversation_id": 7, "seq": 2, "role": "tool", "text": "ok"}),
        (ModelCall, {"run_id": uuid.uuid4(), "round": 2, "provider": "p", "model": "m"}),
        (Draft, {"ad_id": 3, "kind": "music", "version": 2, "payload": {"a": 1}}),
        (RunEvent, {}),
    ],
)
def test_a_new_row_is_the_instance_its_models_constructor_makes(model, values):
    made = new_row(model, **values)

    assert type(made) is model
    assert _values(made) == _values(model(**values))
    assert all(
        isinstance(getattr(made, f.attname), uuid.UUID)
        for f in model._meta.concrete_fields
        if f.default is uuid.uuid4
    )
    assert (made._state.adding, made._state.db, made._state.fields_cache) == (True, None, {})


def test_a_new_rows_mutable_defaults_are_its_own():
    first, second = new_row(RunEvent, seq=1), new_row(RunEvent, seq=2)

    first.data["x"] = 1
    assert second.data == {}
    assert Message._meta.get_field("tool_calls").default is list
    assert new_row(Message).tool_calls is not new_row(Message).tool_calls


def test_a_new_row_refuses_a_name_that_is_not_a_fields_attribute():
    with pytest.raises(TypeError, match="RunEvent has no field run, sequence"):
        new_row(RunEvent, run=None, sequence=1, seq=1)


def test_a_model_with_init_receivers_is_made_by_its_constructor():
    from django.db.models.signals import post_init

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=RunEvent)
    try:
        made = new_row(RunEvent, seq=4)
    finally:
        post_init.disconnect(receiver, sender=RunEvent)
    assert seen == [made]
    assert made.seq == 4


def test_new_rows_are_written_and_read_back(run):
    batch = Batch()
    batch.insert(new_row(RunEvent, run_id=run.pk, seq=1, type="text", data={"t": "é"}))
    batch.insert(
        new_row(Message, conversation_id=run.conversation_id, run_id=run.pk, seq=1, role="user")
    )
    batch.write()

    event = RunEvent.objects.get(run=run)
    assert (event.seq, event.type, event.data) == (1, "text", {"t": "é"})
    message = Message.objects.get(run=run)
    assert (message.role, message.text, message.tool_calls, message.tokens) == ("user", "", [], 0)
