"""A run whose worker is killed on every attempt, under a real Celery worker: after
``ADSTUDIO_RUN_MAX_RESUMES`` takeovers it ends failed with ``resume_limit``, and the next
message of its conversation is answered by the worker that comes up after the last kill."""

from __future__ import annotations

import pytest

from conversations.models import Message, ModelCall, Run, RunEvent
from conversations.run_request import RunRequest
from conversations.runs.recover import runs_recover
from conversations.services import brief_send, send_message
from testbed.fake_openai import turn
from tests.support.fixtures import STALE_AFTER
from tests.support.worker import heartbeat_stale, wait_for, wait_until_finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def kill_and_recover(worker, run: Run) -> None:
    """SIGKILL the worker; a new one comes up at once (as in a deploy), and once the dead
    worker's heartbeat is stale, a sweep (as the workers run every interval) hands the run
    on, unless the new worker's own sweep already did."""
    claims = Run.objects.get(pk=run.pk).claims
    worker.kill()
    worker.start()

    def handed_on_or_stale() -> bool:
        current = Run.objects.get(pk=run.pk)
        taken = current.claims > claims or current.status != "running"
        return taken or heartbeat_stale(run, STALE_AFTER)

    wait_for(handed_on_or_stale, timeout=STALE_AFTER + 10, what="a stale heartbeat")
    runs_recover()


def test_a_run_that_kills_its_worker_every_time_ends_failed(worker, fake_openai, make_ad, settings):
    worker.env["ADSTUDIO_RUN_MAX_RESUMES"] = "1"  # read by the workers started from now on
    # The test's own sweep (kill_and_recover) takes a run for dead when the workers do:
    # with the default 120 s it handed nothing on, and the run moved only when a new
    # worker came up slowly enough for its start-up sweep to find the heartbeat stale.
    settings.ADSTUDIO_RUN_STALE_AFTER = STALE_AFTER
    fake_openai.script(
        turn("never delivered", delay=30.0),  # attempt 1: its worker is killed meanwhile
        turn("never delivered either", delay=30.0),  # attempt 2 (the one resume): the same
        turn("The calmer version is ready."),  # the conversation's next message
    )
    ad = make_ad(language="en")
    run = brief_send(request=RunRequest(ad=ad))
    following = send_message(
        request=RunRequest(conversation=run.conversation, text="make it calmer")
    )
    fake_openai.wait_for_requests(1)  # attempt 1's

    kill_and_recover(worker, run)
    fake_openai.wait_for_requests(2, timeout=60)  # attempt 2's, by the worker started anew
    run.refresh_from_db()
    assert (run.status, run.claims, run.resumes) == ("running", 2, 1)

    kill_and_recover(worker, run)  # the new worker's claim finds the limit reached
    assert wait_until_finished(following).status == "succeeded"  # the conversation's next run

    run.refresh_from_db()
    assert (run.status, run.stop_cause, run.error_code) == ("failed", "error", "resume_limit")
    assert "attempted 2 times" in run.error_message
    assert "ADSTUDIO_RUN_MAX_RESUMES=1" in run.error_message
    assert run.claims == 2  # the third worker did not take it
    finished = RunEvent.objects.filter(run=run, type="run.finished")
    assert [e.data["errorCode"] for e in finished] == ["resume_limit"]
    assert len(fake_openai.requests) == 3  # the failed run asked nothing more
    # Each of its two provider requests has its row, the last attempt's too.
    calls = list(ModelCall.objects.filter(run=run).order_by("attempt"))
    assert [(c.round, c.attempt, c.error_code) for c in calls] == [
        (1, 1, "interrupted"),
        (1, 2, "interrupted"),
    ]
    assert not Message.objects.filter(run=run, role="assistant").exists()
    following.refresh_from_db()
    assert following.final_message == "The calmer version is ready."
    # The next run's request carried the failed run's message, but no answer to it.
    last = fake_openai.requests[-1]["messages"]
    assert [m["role"] for m in last[1:]] == ["user", "user"]
    log = worker.log.read_text()
    assert "ends failed (resume_limit)" in log and "Traceback" not in log
