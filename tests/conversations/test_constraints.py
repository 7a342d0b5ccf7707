"""Conversation, message and run invariants live in the database."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from conversations.models import Conversation, Message, ModelCall, Run, RunEvent, RunStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(ad):
    return Conversation.objects.create(ad=ad, provider="demo", model="demo")


@pytest.fixture
def run(conversation):
    return Run.objects.create(conversation=conversation, input_text="hello")


def _refused(constraint: str, make) -> None:
    with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
        make()
    assert constraint in str(excinfo.value)


def test_message_seq_is_unique_per_conversation(conversation, make_ad):
    Message.objects.create(conversation=conversation, seq=1, role="user", text="hi")
    _refused(
        "message_unique_seq",
        lambda: Message.objects.create(conversation=conversation, seq=1, role="user", text="x"),
    )
    other = Conversation.objects.create(ad=make_ad(title="Another ad"))
    Message.objects.create(conversation=other, seq=1, role="user", text="hi")


def test_message_seq_starts_at_one(conversation):
    _refused(
        "message_seq_positive",
        lambda: Message.objects.create(conversation=conversation, seq=0, role="user"),
    )


def test_message_role_is_checked(conversation):
    _refused(
        "message_role_valid",
        lambda: Message.objects.create(conversation=conversation, seq=1, role="robot"),
    )


def test_tool_message_answers_a_call(conversation):
    _refused(
        "message_tool_has_call_id",
        lambda: Message.objects.create(conversation=conversation, seq=1, role="tool", text="{}"),
    )
    Message.objects.create(conversation=conversation, seq=1, role="tool", tool_call_id="c1")


def test_run_status_is_checked(conversation):
    _refused(
        "run_status_valid",
        lambda: Run.objects.create(conversation=conversation, input_text="x", status="paused"),
    )


def test_finished_run_has_finish_time_and_unfinished_has_none(conversation):
    _refused(
        "run_finished_at_matches_status",
        lambda: Run.objects.create(
            conversation=conversation, input_text="x", status=RunStatus.SUCCEEDED
        ),
    )
    _refused(
        "run_finished_at_matches_status",
        lambda: Run.objects.create(
            conversation=conversation, input_text="x", finished_at=timezone.now()
        ),
    )
    Run.objects.create(
        conversation=conversation,
        input_text="x",
        status=RunStatus.FAILED,
        finished_at=timezone.now(),
    )


def test_an_idempotency_key_starts_one_run_per_user(conversation, user, other_user):
    Run.objects.create(conversation=conversation, requested_by=user, idempotency_key="k1")
    _refused(
        "run_unique_idempotency_key",
        lambda: Run.objects.create(
            conversation=conversation, requested_by=user, idempotency_key="k1"
        ),
    )
    Run.objects.create(conversation=conversation, requested_by=other_user, idempotency_key="k1")
    for _ in range(2):  # without a key, any number
        Run.objects.create(conversation=conversation, requested_by=user, idempotency_key="")


def test_model_call_round_starts_at_one(run):
    _refused(
        "model_call_round_positive",
        lambda: ModelCall.objects.create(run=run, round=0, provider="demo", model="demo"),
    )


def test_run_event_seq_is_unique_and_type_checked(run):
    RunEvent.objects.create(run=run, seq=1, type="run.started")
    _refused(
        "run_event_unique_seq",
        lambda: RunEvent.objects.create(run=run, seq=1, type="text"),
    )
    _refused(
        "run_event_type_valid",
        lambda: RunEvent.objects.create(run=run, seq=2, type="bogus"),
    )


def test_a_run_inserted_by_the_release_before_gets_no_client_message_id(conversation):
    """A web process of the previous release names no ``client_message_id`` (nor brief,
    nor replaced run) while the next one migrates: its run is still stored."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO conversations_run (id, conversation_id, status, input_text, provider, "
            "model, rounds, stop_cause, prompt_tokens, completion_tokens, cached_tokens, cost, "
            "cost_exact, error_code, error_message, final_message, idempotency_key, "
            "idempotency_fingerprint, cancel_requested, claims, resumes, trace_context, "
            "created_at) VALUES (gen_random_uuid(), %s, 'queued', 'hi', '', '', 0, '', 0, 0, "
            "0, 0, true, '', '', '', '', '', false, 0, 0, '', now()) RETURNING id",
            [conversation.pk],
        )
        run = Run.objects.get(pk=cursor.fetchone()[0])
    assert (run.client_message_id, run.brief, run.replaces_id) == ("", None, None)


def test_a_run_replaces_at_most_one_and_is_replaced_at_most_once(conversation, run):
    Run.objects.create(conversation=conversation, input_text="hello", replaces=run)
    _refused(
        "replaces_id",
        lambda: Run.objects.create(conversation=conversation, input_text="hello", replaces=run),
    )
