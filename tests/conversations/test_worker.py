"""Runs through a real Celery worker (thread pool) on Redis: ordering, and recovery after
the worker is killed with SIGKILL while it waits on the model."""

from __future__ import annotations

import pytest
from django.db.models import Count

from conversations.models import Conversation, Message, ModelCall, RunEvent
from conversations.run_request import RunRequest
from conversations.services import brief_send, send_message
from drafts.models import Draft
from drafts.services import draft_create
from renders.models import Render
from renders.services import render_request
from testbed.fake_openai import call, turn
from tests.support.fixtures import STALE_AFTER
from tests.support.versions import music, voices
from tests.support.worker import heartbeat_stale, wait_for, wait_until_finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_extra_env(tmp_path) -> dict[str, str]:
    """Sweeps each second; the scratch tracks the worker makes under the test's folder."""
    return {"ADSTUDIO_RECOVERY_INTERVAL": "1", "MEDIA_ROOT": str(tmp_path / "media")}


@pytest.mark.parametrize("worker_extra_env", [{"ADSTUDIO_WORKER_LOADS_AUDIO": "1"}])
def test_a_worker_reads_the_token_encoding_and_the_sdks_before_it_takes_tasks(worker):
    log = worker.log.read_text()
    for loaded in (
        "token encoding loaded in",
        "provider adapters loaded in",
        "scratch-track audio loaded in",
    ):
        assert loaded in log, log
        assert log.index(loaded) < log.index(" ready."), log


def test_a_worker_told_not_to_leaves_the_audio_for_its_first_render(worker, make_ad, user):
    """The suite's workers run ``ADSTUDIO_WORKER_LOADS_AUDIO=0`` (``LEAN_WORKER``):
    they start without the mix's libraries, and load them for the first render."""
    log = worker.log.read_text()
    assert "scratch-track audio left for the first render" in log, log
    assert "scratch-track audio loaded in" not in log, log
    assert log.index("provider adapters loaded in") < log.index(" ready."), log

    ad = make_ad(language="en", duration_s=10)
    versions = {
        "voices": draft_create(ad=ad, version=voices("Hello there."))[0],
        "music": draft_create(ad=ad, version=music("warm pad", duration=10))[0],
        "sfx": None,
    }
    render, queued = render_request(ad=ad, versions=versions, user=user)
    assert queued
    wait_for(
        lambda: Render.objects.get(pk=render.pk).status in ("done", "failed"),
        what="the render",
    )
    render.refresh_from_db()
    assert render.status == "done", (render.error, worker.log.read_text()[-3000:])


def test_a_worker_answers_turns_of_one_conversation_in_order(worker, fake_openai, make_ad):
    ad = make_ad(language="en")
    fake_openai.script(turn("first", delay=0.5), turn("second"), turn("third"))
    conversation = Conversation.objects.create(ad=ad)

    runs = [
        send_message(request=RunRequest(conversation=conversation, text=t))
        for t in ("one", "two", "three")
    ]

    for run in runs:
        wait_until_finished(run)
    assert [r.status for r in runs] == ["succeeded"] * 3
    rows = list(
        Message.objects.filter(conversation=conversation)
        .order_by("seq")
        .values_list("text", flat=True)
    )
    assert rows == ["one", "first", "two", "second", "three", "third"]
    assert [len(r["messages"]) for r in fake_openai.requests] == [2, 4, 6]


def test_a_run_survives_its_worker_being_killed_mid_model_call(worker, fake_openai, make_ad):
    ad = make_ad(language="en")
    fake_openai.script(
        turn("never delivered", delay=5.0),  # the worker dies while waiting on this
        turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})]),
        turn("Music v1 is ready."),
    )
    run = brief_send(request=RunRequest(ad=ad))
    fake_openai.wait_for_requests(1)
    run.refresh_from_db()
    assert run.status == "running"

    worker.kill()
    wait_for(lambda: heartbeat_stale(run, STALE_AFTER), what="its heartbeat to go stale")
    worker.start()  # recovery runs when a worker starts

    wait_until_finished(run)  # resumed
    assert run.status == "succeeded", run.error_message
    assert run.final_message == "Music v1 is ready."
    assert Message.objects.filter(conversation=run.conversation, role="user").count() == 1
    assert Message.objects.filter(conversation=run.conversation, role="assistant").count() == 2
    assert list(Draft.objects.values_list("kind", "version")) == [("music", 1)]
    # Every request the provider saw has its row, the one in flight at the kill too: it
    # may be paid for, so its prompt (estimated) counts in the run's usage.
    calls = list(ModelCall.objects.filter(run=run).order_by("id"))
    assert len(calls) == len(fake_openai.requests) == 3
    interrupted = calls[0]
    assert (interrupted.round, interrupted.error_code) == (1, "interrupted")
    assert interrupted.prompt_tokens > 100 and not interrupted.usage_exact
    assert [(c.round, c.error_code) for c in calls[1:]] == [(1, ""), (2, "")]
    assert run.prompt_tokens == sum(c.prompt_tokens for c in calls)
    assert not run.cost_exact
    events = RunEvent.objects.filter(run=run)
    assert events.filter(type="run.finished").count() == 1
    assert [e.data["resumed"] for e in events.filter(type="run.started").order_by("seq")] == [
        False,
        True,
    ]
    # nothing ran twice
    assert (
        not Draft.objects.values("run_id", "tool_call_id").annotate(n=Count("id")).filter(n__gt=1)
    )


def test_a_dead_workers_run_is_resumed_by_a_live_worker_with_nothing_restarted(
    worker, broker_url, fake_openai, make_ad, tmp_path, worker_extra_env
):
    """Two workers, no beat: the one holding the run is killed and never restarted; the
    other, started before the kill, resumes the run with its own sweep once the run's
    heartbeat is stale."""
    import time

    from testbed.worker import WorkerProcess
    from tests.support.fixtures import worker_env

    ad = make_ad(language="en")
    fake_openai.script(
        turn("never delivered", delay=30.0),  # its worker dies while waiting on this
        turn("Resumed."),
    )
    run = brief_send(request=RunRequest(ad=ad))
    fake_openai.wait_for_requests(1)  # the only worker has it
    survivor = WorkerProcess(
        log_dir=tmp_path,
        env={**worker_env(broker_url=broker_url, fake_openai=fake_openai), **worker_extra_env},
        name="survivor",
        forked=True,
    )
    survivor.start()
    try:
        worker.kill()
        killed_at = time.monotonic()
        wait_until_finished(run, timeout=30)
        resumed_after = time.monotonic() - killed_at
    finally:
        survivor.kill()

    assert run.status == "succeeded" and run.final_message == "Resumed."
    assert run.resumes == 1
    assert "recovery re-enqueued 1 run(s)" in survivor.log.read_text()
    # Stale after 3 s, a sweep every second: well within, on a busy machine too.
    assert resumed_after < STALE_AFTER + 10, resumed_after
