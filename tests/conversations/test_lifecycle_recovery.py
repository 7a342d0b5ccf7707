"""The recovery sweep sends a run's task again only when the last one may have been lost.
Sweeps come one after another (every worker process's, and the ones sent by hand that
piled up in the queue while no worker ran them, run back to back when one comes back): each
must not add another message for every run of a backlog.

The messages are counted in the broker itself: the Redis list of the tasks' queue."""

from __future__ import annotations

import base64
import json
from collections import Counter
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from adstudio.celery import app as celery_app
from conversations.models import Conversation, Run
from conversations.run_request import RunRequest
from conversations.runs.enqueue import ENQUEUE_FAILED
from conversations.runs.finish import run_finish
from conversations.runs.recover import runs_recover
from conversations.services import run_requeue, send_message
from tests.support.worker import REDIS_URL, flush_broker

pytestmark = pytest.mark.django_db(transaction=True)


def pending_tasks() -> Counter:
    """Run id -> task messages waiting in the broker's queue."""
    queue = redis.Redis.from_url(REDIS_URL).lrange(celery_app.conf.task_default_queue, 0, -1)
    counts: Counter = Counter()
    for raw in queue:
        message = json.loads(raw)
        assert message["headers"]["task"] == "conversations.tasks.run_agent"
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        counts[args[0]] += 1
    return counts


def one_each(*runs: Run) -> Counter:
    return Counter({str(run.pk): 1 for run in runs})


def ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds + 1)


def test_sweeps_over_a_backlog_without_workers_send_each_run_once(broker, make_ad):
    """Redis restarted (the messages are gone) while no worker runs: queued runs, a run
    whose worker died and a run whose send failed are each sent once, however many sweeps
    run; a task not taken within the window is taken for lost and sent once more."""
    grace, stale_after = settings.ADSTUDIO_QUEUED_RUN_GRACE, settings.ADSTUDIO_RUN_STALE_AFTER
    queued = [
        send_message(
            request=RunRequest(conversation=Conversation.objects.create(ad=make_ad()), text=str(n))
        )
        for n in range(3)
    ]
    assert pending_tasks() == one_each(*queued)  # sent as they were stored
    Run.objects.filter(pk__in=[r.pk for r in queued]).update(created_at=ago(grace))
    dead = Run.objects.create(
        conversation=Conversation.objects.create(ad=make_ad()),
        input_text="its worker was killed",
        status="running",
        claims=1,
        started_at=ago(stale_after),
        heartbeat_at=ago(stale_after),
    )
    unsent = Run.objects.create(
        conversation=Conversation.objects.create(ad=make_ad()),
        input_text="sent while the broker was down",
        error_code=ENQUEUE_FAILED,
        error_message="The task queue was unavailable; the run will be retried.",
    )
    flush_broker()  # the restart

    for _ in range(5):
        runs_recover()

    assert pending_tasks() == one_each(*queued, dead, unsent)
    unsent.refresh_from_db()
    assert (unsent.error_code, unsent.error_message) == ("", "")  # it is sent now

    # Still not taken a window later: those messages may have been lost too.
    Run.objects.filter(status="queued").update(enqueued_at=ago(grace))
    Run.objects.filter(pk=dead.pk).update(enqueued_at=ago(stale_after))
    for _ in range(3):
        runs_recover()

    assert pending_tasks() == one_each(*queued, dead, unsent) + one_each(*queued, dead, unsent)


def test_a_run_whose_turn_comes_is_not_sent_again_by_the_next_sweep(broker, make_ad):
    """Its predecessor's finish sends it; the sweeps that follow see that send."""
    conversation = Conversation.objects.create(ad=make_ad())
    first = Run.objects.create(
        conversation=conversation,
        input_text="one",
        status="running",
        claims=1,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    second = Run.objects.create(conversation=conversation, input_text="two")
    Run.objects.filter(pk=second.pk).update(created_at=ago(settings.ADSTUDIO_QUEUED_RUN_GRACE))

    assert run_finish(run_id=first.pk, status="succeeded", cause="final_answer")
    assert pending_tasks() == one_each(second)

    for _ in range(3):
        runs_recover()

    assert pending_tasks() == one_each(second)


def test_a_run_staff_requeue_is_not_sent_again_by_the_next_sweep(broker, make_ad):
    """The requeue sends it; the sweeps within the window see that send."""
    run = Run.objects.create(
        conversation=Conversation.objects.create(ad=make_ad()),
        input_text="one",
        status="failed",
        claims=1,
        started_at=ago(settings.ADSTUDIO_QUEUED_RUN_GRACE),
        finished_at=ago(settings.ADSTUDIO_QUEUED_RUN_GRACE),
        error_code="provider_unavailable",
    )
    Run.objects.filter(pk=run.pk).update(created_at=ago(settings.ADSTUDIO_QUEUED_RUN_GRACE))

    assert run_requeue(run=Run.objects.get(pk=run.pk))
    for _ in range(3):
        runs_recover()

    assert pending_tasks() == one_each(run)
