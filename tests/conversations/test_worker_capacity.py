"""A worker's start-up check: its database pool must serve the runs that compute at once."""

from __future__ import annotations

import os
import subprocess

import pytest
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.concurrency.thread import TaskPool as ThreadPool

from conversations.runs.worker_capacity import connections_needed, shortfall, worker_threads
from testbed.worker import worker_command
from tests.support.worker import REDIS_URL, ROOT, database_url


def test_connections_needed_follow_the_step_gate_not_the_threads():
    assert connections_needed(threads=16, slots=2) == 4
    assert connections_needed(threads=1, slots=2) == 3  # never more runs than threads
    assert connections_needed(threads=16, slots=0) == 18  # no gate: every thread computes


def test_a_pool_too_small_is_named_with_what_to_set():
    assert shortfall(threads=16, slots=2, pool_size=4) is None
    assert shortfall(threads=16, slots=2, pool_size=None) is None  # unpooled: one each
    problem = shortfall(threads=16, slots=0, pool_size=10)
    assert problem is not None
    assert "ADSTUDIO_DB_POOL_MAX_SIZE=10 is too small" in problem
    assert "ADSTUDIO_DB_POOL_MAX_SIZE=18 or more" in problem
    assert "ADSTUDIO_STEP_SLOTS=0" in problem


def test_prefork_processes_run_one_task_at_a_time():
    assert worker_threads(PreforkPool, 8) == 1
    assert worker_threads(ThreadPool, 8) == 8


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db
def test_a_worker_whose_pool_cannot_serve_its_threads_does_not_start(tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": REDIS_URL,
        "ADSTUDIO_STEP_SLOTS": "0",
        "ADSTUDIO_DB_POOL_MAX_SIZE": "5",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    command = worker_command(concurrency=8, loglevel="INFO", extra=("--without-mingle",))
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert result.returncode == os.EX_CONFIG, output
    assert "worker not started: ADSTUDIO_DB_POOL_MAX_SIZE=5 is too small" in output
    assert "ADSTUDIO_DB_POOL_MAX_SIZE=10 or more" in output
    assert " ready." not in output
