"""One clock: a worker whose host clock runs a minute behind (libfaketime) keeps its run,
which a sweep on a host with the right time judges by the database's clock, and the run's
times stay in order (created, started, its events, finished)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conversations.models import RunEvent
from conversations.run_request import RunRequest
from conversations.runs.recover import runs_recover
from conversations.services import brief_send
from testbed.fake_openai import turn
from tests.support.worker import wait_until_finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")


@pytest.fixture
def worker_extra_env() -> dict[str, str]:
    if not LIBFAKETIME.exists():
        pytest.skip(f"{LIBFAKETIME} is missing (apt-get install faketime; .ci/run does)")
    # The wall clock a minute behind, its monotonic clock right (a host's clock that is
    # off; waits and timeouts are measured on the monotonic one). Stale after 8 s: far
    # less than the skew, and enough that a loaded machine's late heartbeat is not what
    # the test sees.
    return {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME": "-60s",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "ADSTUDIO_RUN_STALE_AFTER": "8",
    }


def test_a_worker_a_minute_behind_keeps_its_run_and_its_times_stay_in_order(
    worker, fake_openai, make_ad, settings
):
    assert "-60s" in worker.env["FAKETIME"]
    settings.ADSTUDIO_RUN_STALE_AFTER = 8  # this host's sweeps judge as the worker's do
    fake_openai.script(turn("A warm family spot.", delay=12.0))  # past the stale limit
    run = brief_send(request=RunRequest(ad=make_ad(language="en")))
    fake_openai.wait_for_requests(1)

    taken_back = []
    deadline = time.monotonic() + 25
    while time.monotonic() < deadline:  # another host's sweeps, with the right time
        taken_back += runs_recover()
        run.refresh_from_db()
        if run.status == "succeeded":
            break
        time.sleep(0.5)
    wait_until_finished(run)

    assert taken_back == [] and run.resumes == 0 and run.claims == 1
    assert run.status == "succeeded" and len(fake_openai.requests) == 1
    assert run.created_at <= run.started_at <= run.finished_at
    assert (run.finished_at - run.created_at).total_seconds() < 30
    stamps = list(
        RunEvent.objects.filter(run=run).order_by("seq").values_list("created_at", flat=True)
    )
    assert stamps == sorted(stamps) and stamps[0] >= run.created_at
