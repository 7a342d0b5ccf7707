"""``columns`` and ``from_row``: plain SQL read back as the instances the ORM would build."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import connection

from adstudio.db.sql import columns, from_row
from conversations.models import Conversation, Run, RunEvent
from drafts.services import ad_create

pytestmark = pytest.mark.django_db


def test_rows_of_two_models_read_back_equal_to_the_orms_instances():
    owner = User.objects.create_user("rows-owner")
    ad = ad_create(owner=owner, title="t", client="c", language="th", duration_s=30)
    conversation = Conversation.objects.create(ad=ad, summary="so far")
    Run.objects.create(
        conversation=conversation,
        input_text="hi",
        cost=Decimal("0.012345"),
        prompt_tokens=7,
        status="running",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns(Conversation, 'c')}, {columns(Run, 'r')}, 42 "
            "FROM conversations_conversation c JOIN conversations_run r "
            "ON r.conversation_id = c.id WHERE c.id = %s",
            [conversation.pk],
        )
        row = cursor.fetchone()

    read_conversation, at = from_row(Conversation, row)
    read_run, at = from_row(Run, row, at)

    assert row[at] == 42  # the index after the second model's columns
    orm_run = Run.objects.get(conversation=conversation)
    for model, read, orm in (
        (Conversation, read_conversation, Conversation.objects.get(pk=conversation.pk)),
        (Run, read_run, orm_run),
    ):
        assert read.pk == orm.pk and not read._state.adding
        for field in model._meta.concrete_fields:
            assert getattr(read, field.attname) == getattr(orm, field.attname), field.name
            assert type(getattr(read, field.attname)) is type(getattr(orm, field.attname))
    assert read_run.cost == Decimal("0.012345") and read_run.status == "running"
    assert read_conversation.summary == "so far"


def test_json_values_are_decoded_as_the_orm_decodes_them():
    owner = User.objects.create_user("rows-json")
    ad = ad_create(owner=owner, title="t", client="c", language="en", duration_s=30)
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")
    event = RunEvent.objects.create(run=run, seq=1, type="text", data={"text": "ก", "n": [1, 2]})
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns(RunEvent, 'e')} FROM conversations_runevent e")
        read, _ = from_row(RunEvent, cursor.fetchone())

    assert read.data == {"text": "ก", "n": [1, 2]}
    assert read.pk == event.pk and read.run_id == run.pk
