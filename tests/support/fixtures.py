"""Fixtures for the tests that need a real Celery worker or web server (registered in
tests/conftest.py).

``worker`` starts a worker process (thread pool) of the test's own, on Redis, that reads
the test database and answers models through ``fake_openai``; ``broker`` makes this
process enqueue to Redis. Both use ``broker_url``: this test process's database of the
shared test Redis unless a test overrides that fixture, e.g. with ``private_redis.url``
to stop and start its own Redis.

``s3_server`` is an S3-compatible server (moto's) in a thread, for the S3 storage.

``private_postgres`` is a PostgreSQL server of the test's own, holding the project's
database migrated: a copy of a cluster built once per test process (initdb, migrate).

``web_stack`` is gunicorn and a worker shared by every test of the session that only talks
to them (HTTP, runs): started once, on a Redis of their own, with a fake model server
that is reset before each test and verified after it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from adstudio.celery import app as celery_app
from testbed.fake_openai import TEST_API_KEY, FakeOpenAIServer
from testbed.fake_s3 import S3Server
from testbed.worker import WorkerProcess
from tests.support.postgres import PostgresServer
from tests.support.web import WebServer
from tests.support.worker import (
    LEAN_WORKER,
    REDIS_URL,
    ROOT,
    RedisServer,
    database_url,
    flush_broker,
    wait_for,
)

STALE_AFTER = 3.0  # seconds: a killed worker's runs are taken over quickly
WORKER_APP = "adstudio-test-worker"  # application_name of the worker's Postgres connections


def worker_env(*, broker_url: str, fake_openai: FakeOpenAIServer) -> dict[str, str]:
    """A test worker's environment: the test database, ``broker_url``, the fake model."""
    return {
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": broker_url,
        "OPENAI_API_KEY": TEST_API_KEY,
        "OPENAI_BASE_URL": fake_openai.base_url,
        "ADSTUDIO_OPENAI_MODEL": "fake-openai",
        "ADSTUDIO_PROVIDER_FALLBACKS": "",
        "ADSTUDIO_PROVIDER_BACKOFF_BASE": "0.01",
        "ADSTUDIO_HEARTBEAT_INTERVAL": "0.5",
        "ADSTUDIO_RUN_STALE_AFTER": str(STALE_AFTER),
        "PGAPPNAME": WORKER_APP,  # libpq: tests find the worker's connections by it
        **LEAN_WORKER,
    }


@pytest.fixture
def broker_url() -> str:
    """The Redis that ``broker`` and ``worker`` use."""
    return REDIS_URL


@pytest.fixture
def private_redis(tmp_path):
    """A Redis server of this test's own (free loopback port, no persistence)."""
    server = RedisServer(log_dir=tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def broker(settings, broker_url):
    """This process enqueues to Redis instead of running tasks in-process."""
    flush_broker(broker_url)
    with enqueueing_to(settings, broker_url):
        yield
    flush_broker(broker_url)


@contextmanager
def enqueueing_to(settings, url: str) -> Iterator[None]:
    """Within the block this process enqueues its tasks to ``url`` (not in-process)."""
    saved = {k: celery_app.conf[k] for k in ("task_always_eager", "broker_url")}
    celery_app.conf.update(task_always_eager=False, broker_url=url)
    _forget_connections()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    try:
        yield
    finally:
        celery_app.conf.update(saved)
        _forget_connections()


def _forget_connections() -> None:
    """Celery caches its connection and producer pools per app: after the broker URL
    changes, the next publish must build them anew from it."""
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def worker_extra_env() -> dict[str, str]:
    """More of the worker's environment: a test module overrides this fixture (e.g. to
    have the worker export its traces)."""
    return {}


@pytest.fixture
def worker(broker, broker_url, fake_openai, tmp_path, worker_extra_env):
    """A running worker of the test's own; tests may ``kill()`` and ``start()`` it again."""
    process = WorkerProcess(
        log_dir=tmp_path,
        env={**worker_env(broker_url=broker_url, fake_openai=fake_openai), **worker_extra_env},
        forked=True,
    )
    process.start()
    yield process
    # Nothing is asserted after the test: no warm shutdown to wait for (about 1.7 s).
    process.kill()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real S3-compatible server (moto's) on loopback, in a thread of this test process,
    shared by its tests: each makes a bucket of its own (``s3_server.bucket()``)."""
    server = S3Server().start()
    yield server
    server.stop()


# --- a PostgreSQL server of the test's own --------------------------------------------------

PRIVATE_DATABASE = "adstudio"  # the project's database in a private server


@pytest.fixture(scope="session")
def migrated_cluster() -> Iterator[Path]:
    """The data directory of a stopped cluster holding ``PRIVATE_DATABASE``, migrated:
    built once, copied by each ``private_postgres``."""
    server = PostgresServer()
    server.start()
    try:
        with psycopg.connect(server.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{PRIVATE_DATABASE}"')
        env = {**os.environ, "DATABASE_URL": server.url(PRIVATE_DATABASE)}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        migrated = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        server.stop()  # a clean shutdown: a copy starts without recovery
        yield server.data
    finally:
        server.remove()


@pytest.fixture
def private_postgres(migrated_cluster: Path) -> Iterator[PostgresServer]:
    """A server of this test's own (it may crash it), with ``PRIVATE_DATABASE`` migrated."""
    server = PostgresServer(copy_of=migrated_cluster)
    server.start()
    yield server
    server.remove()


# --- the shared stack --------------------------------------------------------------------


@dataclass
class Stack:
    """The shared gunicorn (``base``) and worker, their Redis and their model server."""

    base: str
    web: WebServer
    worker: WorkerProcess
    redis: RedisServer
    fake_openai: FakeOpenAIServer


@pytest.fixture(scope="session")
def shared_stack(django_db_setup, tmp_path_factory) -> Iterator[Stack]:
    """Started at the first test that asks for it, stopped before the test database is
    dropped. gunicorn runs as README deploys it: no DEBUG, static files collected."""
    directory = tmp_path_factory.mktemp("stack")
    fake_openai = FakeOpenAIServer().start()
    redis = RedisServer(log_dir=directory)
    redis.start()
    worker = WorkerProcess(
        log_dir=directory,
        env={
            **worker_env(broker_url=redis.url, fake_openai=fake_openai),
            # Not WORKER_APP: the tests that drop a worker's connections drop their own.
            "PGAPPNAME": "adstudio-test-shared-worker",
            "MEDIA_ROOT": str(directory / "media"),  # scratch tracks, read by the web
            # It lives through the session, beside the workers the tests start on the same
            # database: its sweeps would send their runs to its own broker and model server.
            "ADSTUDIO_SWEEPS": "0",
            # Started as a worker host starts it: it renders the web's scratch tracks.
            "ADSTUDIO_WORKER_LOADS_AUDIO": "1",
            "CELERY_SKIP_CHECKS": "",
        },
        name="shared",
    )
    web_env = {
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": redis.url,
        "DEBUG": "0",
        "STATIC_ROOT": str(directory / "static"),
        "MEDIA_ROOT": str(directory / "media"),
    }
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env={**os.environ, **web_env, "DJANGO_SETTINGS_MODULE": "adstudio.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    web = WebServer(env=web_env, log=directory / "web.log")
    try:
        worker.start()
        web.start(ready_path="/admin/login/")
        yield Stack(web.base, web, worker, redis, fake_openai)
    finally:
        web.stop()
        worker.kill()
        redis.stop()
        fake_openai.stop()


@pytest.fixture
def web_stack(shared_stack: Stack, settings) -> Iterator[Stack]:
    """The shared stack for one test: its model server reset, this process enqueueing to
    its worker. After the test, every run has ended (nothing of it reaches the next test's
    tables) and the model server saw no unscripted or malformed request; what the web
    server and the worker logged during the test is printed (pytest shows it on a
    failure)."""
    shared_stack.fake_openai.reset()
    processes = (shared_stack.web, shared_stack.worker)
    logs = {process.log: process.log.stat().st_size for process in processes}
    with enqueueing_to(settings, shared_stack.redis.url):
        yield shared_stack
        from conversations.models import Run, RunStatus

        unfinished = Run.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        wait_for(lambda: not unfinished.exists(), what="the shared worker's runs to end")
    for log, start in logs.items():
        with log.open() as text:
            text.seek(start)
            print(f"{log.name} during the test:\n{text.read()}")
    problems = shared_stack.fake_openai.verify()
    if problems:
        pytest.fail("fake OpenAI server:\n  " + "\n  ".join(problems), pytrace=False)
