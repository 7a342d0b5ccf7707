"""A run that takes its worker down with it every time (a crash it causes, memory it
exhausts) is resumed at most ``ADSTUDIO_RUN_MAX_RESUMES`` times; then it ends failed and
its conversation moves on, instead of taking down every worker in turn for ever.

The takeovers are driven through ``run_claim`` as the recovery sweep's tasks make them,
each after the heartbeat of the worker before went stale; tests/reliability/
test_resume_limit.py kills real workers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation, Run, RunEvent
from conversations.runs.claim import run_claim
from conversations.services import run_requeue
from testbed.fake_openai import turn
from tests.support.settings_module import start_up_error

pytestmark = pytest.mark.django_db(transaction=True)


def worker_stops(run: Run, settings) -> None:
    """What the recovery sweep sees of a killed worker: a heartbeat older than the limit."""
    stale = timezone.now() - timedelta(seconds=settings.ADSTUDIO_RUN_STALE_AFTER + 1)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=stale)


def test_a_run_whose_worker_keeps_stopping_ends_failed_and_the_next_run_starts(
    fake_providers, en_ad, settings
):
    settings.ADSTUDIO_RUN_MAX_RESUMES = 2
    fake_providers.script(turn("The second answer."))
    conversation = Conversation.objects.create(ad=en_ad)
    first = Run.objects.create(conversation=conversation, input_text="first")
    second = Run.objects.create(conversation=conversation, input_text="second")  # waits
    assert run_claim(run_id=first.pk) is not None  # attempt 1
    for resumes in (1, 2):  # attempts 2 and 3, each after the worker before stopped
        worker_stops(first, settings)
        claim = run_claim(run_id=first.pk)
        assert claim is not None and claim.run.resumes == resumes

    worker_stops(first, settings)
    assert run_claim(run_id=first.pk) is None  # no attempt 4

    first.refresh_from_db()
    assert (first.status, first.stop_cause, first.error_code) == ("failed", "error", "resume_limit")
    assert first.finished_at is not None and first.claims == 3
    assert "attempted 3 times" in first.error_message
    assert "ADSTUDIO_RUN_MAX_RESUMES=2" in first.error_message
    finishes = list(RunEvent.objects.filter(run=first, type="run.finished"))
    assert [e.data for e in finishes] == [
        {"status": "failed", "stopCause": "error", "errorCode": "resume_limit"}
    ]
    # As after any finish, the conversation's next run was started (here, in-process).
    second.refresh_from_db()
    assert (second.status, second.final_message) == ("succeeded", "The second answer.")
    assert len(fake_providers.requests) == 1  # the failed run asked the model nothing more


def test_a_lost_connection_is_no_takeover_and_a_requeued_run_counts_again(
    fake_providers, en_ad, settings
):
    """The worker that holds the run takes it again after losing its database connection:
    not a worker that stopped. Staff requeueing a run that hit the limit gives it a new
    count."""
    settings.ADSTUDIO_RUN_MAX_RESUMES = 1
    run = Run.objects.create(conversation=Conversation.objects.create(ad=en_ad), input_text="hi")
    claim = run_claim(run_id=run.pk)
    again = run_claim(run_id=run.pk, holder=claim.run.claims)
    assert again is not None and again.run.resumes == 0
    worker_stops(run, settings)
    assert run_claim(run_id=run.pk).run.resumes == 1
    worker_stops(run, settings)
    assert run_claim(run_id=run.pk) is None
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "resume_limit")
    assert "attempted 2 times" in run.error_message and "resumed once" in run.error_message

    fake_providers.script(turn("Done at last."))
    assert run_requeue(run=run)  # runs in-process at once

    run.refresh_from_db()
    assert (run.status, run.final_message, run.resumes) == ("succeeded", "Done at last.", 0)


def test_an_invalid_resume_limit_is_a_start_up_error():
    error = start_up_error({"ADSTUDIO_RUN_MAX_RESUMES": "-1"})
    assert "ADSTUDIO_RUN_MAX_RESUMES=-1 must be at least 0" in error
