"""A worker whose run another worker has claimed since (``Run.claims`` moved on) writes
nothing more of it, even between that claim and its own next heartbeat: each step's
write checks the claim in its own statement. The takeover is a real claim, made on
another database connection at the worst moment: after the model replied, and before the
call it asked for runs, both before the step (the reply with the call's result) is
written."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

import conversations.agent.steps
import providers
from conversations.agent.loop import run_agent
from conversations.models import Conversation, Message, ModelCall, Run, RunEvent
from conversations.runs.claim import run_claim
from drafts.models import Draft
from testbed.fake_openai import call, turn

pytestmark = pytest.mark.django_db(transaction=True)

MUSIC = call("create_music_draft", {"prompt": "warm acoustic pop"})


def take_over(run_id) -> None:
    """Another worker's claim, on its own connection: the run's heartbeat is taken for
    stale (the first worker was out of touch past the limit) and the run claimed."""

    def claim() -> None:
        try:
            with transaction.atomic():
                stale = timezone.now() - timedelta(days=1)
                Run.objects.filter(pk=run_id).update(heartbeat_at=stale)
                claims.append(run_claim(run_id=run_id))
        finally:
            connection.close()

    claims: list = []
    thread = threading.Thread(target=claim)
    thread.start()
    thread.join()
    assert claims and claims[0] is not None, "the takeover did not happen"


def resume_elsewhere(run: Run) -> None:
    """A third worker takes the run over once the second's heartbeat is stale too."""
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(days=1))
    run_agent(run.pk)


def assert_resumed_from_the_users_message(run: Run) -> None:
    """The third worker asked the model again and ended the run with one music draft; the
    first worker's request is on record as interrupted: it may have been paid for."""
    run.refresh_from_db()
    assert (run.status, run.final_message) == ("succeeded", "Music v1 is ready.")
    assert list(Draft.objects.values_list("kind", "version")) == [("music", 1)]
    rows = Message.objects.filter(run=run).order_by("seq")
    assert [(m.seq, m.role) for m in rows] == [
        (1, "user"),
        (2, "assistant"),
        (3, "tool"),
        (4, "assistant"),
    ]
    assert rows[2].tool_call_id == rows[1].tool_calls[0]["id"]
    calls = ModelCall.objects.filter(run=run).order_by("id")
    assert [(c.round, c.error_code) for c in calls] == [(1, "interrupted"), (1, ""), (2, "")]


def events_of(run: Run) -> list[tuple[str, dict]]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", "data"))


@pytest.fixture
def run(en_ad) -> Run:
    return Run.objects.create(conversation=Conversation.objects.create(ad=en_ad), input_text="go")


def test_a_reply_that_arrives_after_a_takeover_is_not_written(
    fake_providers, run, monkeypatch, caplog
):
    fake_providers.script(turn("I will write the music.", tool_calls=[MUSIC]))
    real_generate = providers.generate

    def reply_then_taken_over(*args, **kwargs):
        response = real_generate(*args, **kwargs)
        take_over(run.pk)  # between the model's reply and the step's write
        return response

    monkeypatch.setattr(providers, "generate", reply_then_taken_over)
    caplog.set_level(logging.WARNING)

    run_agent(run.pk)

    run.refresh_from_db()
    assert (run.status, run.claims, run.rounds) == ("running", 2, 0)  # the other's to finish
    rows = Message.objects.filter(run=run).order_by("seq")
    assert [(m.seq, m.role) for m in rows] == [(1, "user")]  # written before the model call
    events = events_of(run)
    # Text streamed while the reply came may have been written as it came (on a busy
    # machine, its first delta arrives later than the text events' interval): before
    # the takeover, and nothing of the step after it.
    assert [e for e in events if e[0] != "text"] == [
        ("run.started", {"resumed": False}),
        ("model_call.started", {"round": 1}),
        ("run.started", {"resumed": True}),  # the other worker's claim
    ]
    assert events[-1] == ("run.started", {"resumed": True})
    assert not ModelCall.objects.filter(run=run).exists()  # the reply's call came with it
    assert not Draft.objects.exists()
    assert "taken over by another worker; this one stops" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text

    monkeypatch.setattr(providers, "generate", real_generate)
    fake_providers.script(turn(tool_calls=[MUSIC]), turn("Music v1 is ready."))
    resume_elsewhere(run)

    assert_resumed_from_the_users_message(run)


def test_a_tool_result_after_a_takeover_is_not_written(fake_providers, run, monkeypatch, caplog):
    """The reply that made the call is stored with the call's result: neither is."""
    fake_providers.script(turn(tool_calls=[MUSIC]))
    real_execute = conversations.agent.steps.execute_tool_call

    def taken_over_then_execute(*args, **kwargs):
        take_over(run.pk)  # after the model's reply, before the call runs and is written
        return real_execute(*args, **kwargs)

    monkeypatch.setattr(conversations.agent.steps, "execute_tool_call", taken_over_then_execute)
    caplog.set_level(logging.WARNING)

    run_agent(run.pk)

    run.refresh_from_db()
    assert (run.status, run.claims, run.rounds) == ("running", 2, 0)
    rows = Message.objects.filter(run=run).order_by("seq")
    assert [(m.seq, m.role) for m in rows] == [(1, "user")]
    assert not Draft.objects.exists()  # staged with the result, in the same statement
    assert not ModelCall.objects.filter(run=run).exists()
    assert [type for type, _ in events_of(run)] == [
        "run.started",
        "model_call.started",
        "run.started",  # the other worker's claim; nothing of the first worker after it
    ]
    assert "taken over by another worker; this one stops" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text

    monkeypatch.setattr(conversations.agent.steps, "execute_tool_call", real_execute)
    fake_providers.script(turn(tool_calls=[MUSIC]), turn("Music v1 is ready."))
    resume_elsewhere(run)

    assert_resumed_from_the_users_message(run)
    assert RunEvent.objects.filter(run=run, type="run.finished").count() == 1
