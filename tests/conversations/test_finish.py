"""Ending a run: once, with its usage added to its conversation and its last event."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Conversation, Message, Run, RunEvent
from conversations.record import log as run_log
from conversations.record.log import EventLog, RunLog
from conversations.runs.finish import history_whole, run_finish
from providers import AssistantMessage

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def running(en_ad):
    conversation = Conversation.objects.create(
        ad=en_ad, prompt_tokens=1000, completion_tokens=100, cost=Decimal("0.5")
    )
    run = Run.objects.create(
        conversation=conversation,
        input_text="Make the ad.",
        status="running",
        prompt_tokens=300,
        completion_tokens=30,
        cached_tokens=200,
        cost=Decimal("0.012345"),
    )
    RunEvent.objects.bulk_create(
        RunEvent(run=run, seq=seq, type="text", data={}) for seq in (1, 2, 3)
    )
    return run


def test_a_finish_ends_the_run_adds_its_usage_and_writes_its_last_event(running):
    with CaptureQueriesContext(connection) as queries:
        finished = run_finish(
            run_id=running.pk,
            status="failed",
            cause="error",
            error_code="provider_unavailable",
            error_message="x" * 5000,
        )

    assert finished
    # The finish and the look-up of the conversation's next run: no lock or commit apart.
    assert len(queries) == 2
    running.refresh_from_db()
    assert (running.status, running.stop_cause, running.error_code) == (
        "failed",
        "error",
        "provider_unavailable",
    )
    assert len(running.error_message) == 4000
    assert running.finished_at is not None
    conversation = running.conversation
    conversation.refresh_from_db()
    assert (conversation.prompt_tokens, conversation.completion_tokens) == (1300, 130)
    assert (conversation.cached_tokens, conversation.cost) == (200, Decimal("0.512345"))
    assert conversation.updated_at == running.finished_at
    last = RunEvent.objects.filter(run=running).order_by("-seq").first()
    assert (last.seq, last.type) == (4, "run.finished")
    assert last.data == {
        "status": "failed",
        "stopCause": "error",
        "errorCode": "provider_unavailable",
    }


def test_a_run_that_has_ended_is_not_finished_again(running):
    assert run_finish(run_id=running.pk, status="succeeded", cause="final_answer")

    again = run_finish(run_id=running.pk, status="failed", cause="error", error_code="late")

    assert not again
    running.refresh_from_db()
    assert (running.status, running.error_code) == ("succeeded", "")
    running.conversation.refresh_from_db()
    assert running.conversation.prompt_tokens == 1300  # added once
    assert RunEvent.objects.filter(run=running, type="run.finished").count() == 1


def test_finishing_a_run_that_does_not_exist_changes_nothing(running):
    import uuid

    assert not run_finish(run_id=uuid.uuid4(), status="succeeded", cause="final_answer")
    assert RunEvent.objects.count() == 3


def test_a_worker_whose_run_was_taken_over_cannot_finish_it(running):
    Run.objects.filter(pk=running.pk).update(claims=2)  # a second worker claimed it
    history(running, USER, CALL, RESULT, ANSWER)

    stale = run_finish(run_id=running.pk, status="failed", cause="error", claim=1)
    holder = run_finish(run_id=running.pk, status="succeeded", cause="final_answer", claim=2)

    assert not stale and holder
    running.refresh_from_db()
    assert running.status == "succeeded"
    assert RunEvent.objects.filter(run=running, type="run.finished").count() == 1


USER = ("user", "Make the ad.", [], "")
CALL = ("assistant", "", [{"id": "c1", "name": "create_music_draft", "arguments": {}}], "")
SECOND_CALL = ("assistant", "", [{"id": "c2", "name": "search_voices", "arguments": {}}], "")
RESULT = ("tool", '{"versionId":"v1"}', [], "c1")
ANSWER = ("assistant", "Music v1 is ready.", [], "")


def history(run: Run, *messages: tuple, first_seq: int = 1, gap_after: int | None = None) -> None:
    seq = first_seq
    for n, (role, text, tool_calls, call_id) in enumerate(messages):
        Message.objects.create(
            conversation=run.conversation,
            run=run,
            seq=seq,
            role=role,
            text=text,
            tool_calls=tool_calls,
            tool_call_id=call_id,
            name="create_music_draft" if call_id else "",
        )
        seq += 2 if n == gap_after else 1


@pytest.mark.parametrize(
    ("messages", "gap_after", "whole"),
    [
        ((USER, CALL, RESULT, ANSWER), None, True),
        ((USER, ANSWER), None, True),
        ((CALL, RESULT, ANSWER), None, False),  # the user message is lost
        ((USER, CALL, ANSWER), None, False),  # a call without its result
        ((USER, CALL, RESULT, SECOND_CALL, ANSWER), None, False),
        ((USER, CALL, RESULT, ANSWER), 1, False),  # a step lost in the middle
        ((USER, CALL, RESULT), None, False),  # no answer after the last result
        ((USER,), None, False),
        ((), None, False),
    ],
    ids=["whole", "no-tools", "no-user", "unanswered", "unanswered-later", "gap", "no-answer",
         "only-user", "empty"],
)  # fmt: skip
def test_a_workers_run_succeeds_only_over_a_whole_history(running, messages, gap_after, whole):
    """A step the database lost is redone, never skipped: the worker's success is not
    written over a history with a hole in it, and the run stays the worker's to resume."""
    Run.objects.filter(pk=running.pk).update(claims=1)
    history(running, *messages, gap_after=gap_after)

    assert history_whole(run_id=running.pk) is whole
    finished = run_finish(run_id=running.pk, status="succeeded", cause="final_answer", claim=1)

    assert finished is whole
    running.refresh_from_db()
    assert running.status == ("succeeded" if whole else "running")
    assert RunEvent.objects.filter(run=running, type="run.finished").count() == int(whole)
    if not whole:  # a failure, a cancellation, or a finish without a claim is not held up
        assert run_finish(run_id=running.pk, status="failed", cause="error", claim=1)


def staged_answer(run: Run, *, next_seq: int) -> RunLog:
    """The run's log with its answer step staged (the answer's seq is ``next_seq``), as
    the loop leaves it for the finish."""
    log = RunLog(
        run=run,
        conversation=run.conversation,
        rows=[],
        next_seq=next_seq,
        events=EventLog(run, next_seq=4),  # after the fixture's 3 events
    )
    log.append(AssistantMessage(text="Music v1 is ready."))
    log.event(run_log.text_whole("Music v1 is ready."))
    run.rounds, run.prompt_tokens = 2, 450  # the counters as the answer's step left them
    log.batch.update(Run, run.pk, rounds=run.rounds, prompt_tokens=run.prompt_tokens)
    return log


@pytest.mark.parametrize(
    ("messages", "gap_after", "answer_seq", "whole"),
    [
        ((USER, CALL, RESULT), None, 4, True),
        ((USER,), None, 2, True),
        ((CALL, RESULT), None, 3, False),  # the user message is lost
        ((USER, CALL), None, 3, False),  # a call without its result
        ((USER, CALL, RESULT), 1, 5, False),  # a step lost in the middle
        ((USER, CALL, RESULT), None, 5, False),  # a step lost before the answer
    ],
    ids=["whole", "no-tools", "no-user", "unanswered", "gap", "not-next"],
)
def test_an_answer_is_written_with_the_finish_only_over_a_whole_history(
    running, messages, gap_after, answer_seq, whole
):
    """The answer and the run's end are one statement (and the look-up of the next run),
    written only if the history is whole with the answer after it; otherwise nothing."""
    Run.objects.filter(pk=running.pk).update(claims=1)
    running.claims = 1
    history(running, *messages, gap_after=gap_after)
    stored = Message.objects.filter(run=running).count()
    answer = staged_answer(running, next_seq=answer_seq)

    with CaptureQueriesContext(connection) as queries:
        finished = run_finish(
            run_id=running.pk,
            status="succeeded",
            cause="final_answer",
            final_message="Music v1 is ready.",
            claim=1,
            answer=answer,
        )

    assert finished is whole
    assert not answer.batch  # written or dropped with the finish's statement
    running.refresh_from_db()
    running.conversation.refresh_from_db()
    messages_now = list(Message.objects.filter(run=running).order_by("seq"))
    events = list(RunEvent.objects.filter(run=running).order_by("seq").values_list("seq", "type"))
    if whole:
        assert len(queries) == 2
        assert (messages_now[-1].role, messages_now[-1].text) == ("assistant", "Music v1 is ready.")
        assert events[-2:] == [(4, "text"), (5, "run.finished")]
        assert (running.status, running.rounds, running.prompt_tokens) == ("succeeded", 2, 450)
        assert running.conversation.prompt_tokens == 1000 + 450
    else:
        assert len(messages_now) == stored
        assert events == [(1, "text"), (2, "text"), (3, "text")]
        assert (running.status, running.rounds, running.prompt_tokens) == ("running", 0, 300)
        assert running.conversation.prompt_tokens == 1000
