"""Celery tasks: run an agent turn, and the periodic recovery sweep. Both take ids only
and are safe to run twice."""

from __future__ import annotations

import logging
import os
import time

from celery import shared_task
from celery.signals import celeryd_after_setup, worker_init

from adstudio.log_context import log_scope
from conversations.agent.loop import run_agent
from conversations.record.tokens import load_encoding
from conversations.runs.enqueue import RUN_AGENT_TASK
from conversations.runs.recover import runs_recover
from conversations.runs.worker_capacity import check_worker
from providers.router import load_adapters

logger = logging.getLogger(__name__)


@shared_task(name=RUN_AGENT_TASK)
def run_agent_task(run_id: str) -> None:
    with log_scope(run_id=run_id):  # every line of the run carries its id
        run_agent(run_id)


@shared_task(name="conversations.tasks.recover_runs")
def recover_runs() -> int:
    """The sweep, by hand (``celery call``): the workers run it on their own."""
    return len(runs_recover())


@worker_init.connect
def _load_at_worker_start(sender=None, **kwargs) -> None:
    """Before the worker takes its first tasks, so the runs it starts at once after a
    deploy do not all wait for the first one to read the encoding and import the
    provider SDKs."""
    started = time.perf_counter()
    load_encoding()
    logger.info("token encoding loaded in %.2f s", time.perf_counter() - started)
    started = time.perf_counter()
    loaded = load_adapters()
    logger.info(
        "provider adapters loaded in %.2f s: %s",
        time.perf_counter() - started,
        ", ".join(loaded) or "none (no provider has a key)",
    )


@celeryd_after_setup.connect
def _check_pool_at_worker_start(sender=None, instance=None, **kwargs) -> None:
    """A worker whose database pool cannot serve its threads does not start: it would
    stall under its first burst of runs instead."""
    problem = check_worker(instance.pool_cls, instance.concurrency)
    if problem:
        logger.critical("worker not started: %s", problem)
        raise SystemExit(os.EX_CONFIG)  # Celery's signals swallow exceptions, not this
