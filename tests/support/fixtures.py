"""Fixtures for the tests that need a real Celery worker (registered in tests/conftest.py).

``worker`` starts a worker process (thread pool) on Redis that reads the test database
and answers models through ``fake_openai``; ``broker`` makes this process enqueue to Redis.
Both use ``broker_url``: the shared test Redis unless a test overrides that fixture, e.g.
with ``private_redis.url`` to stop and start its own Redis.
"""

from __future__ import annotations

import pytest

from adstudio.celery import app as celery_app
from tests.fakes.server import TEST_API_KEY
from tests.support.worker import REDIS_URL, RedisServer, WorkerProcess, database_url, flush_broker

STALE_AFTER = 3.0  # seconds: a killed worker's runs are taken over quickly
WORKER_APP = "adstudio-test-worker"  # application_name of the worker's Postgres connections


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
    saved = {k: celery_app.conf[k] for k in ("task_always_eager", "broker_url")}
    celery_app.conf.update(task_always_eager=False, broker_url=broker_url)
    _forget_connections()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    yield
    celery_app.conf.update(saved)
    _forget_connections()
    flush_broker(broker_url)


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
    """A running worker; tests may ``kill()`` and ``start()`` it again."""
    process = WorkerProcess(
        log_dir=tmp_path,
        env={
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
            **worker_extra_env,
        },
    )
    process.start()
    yield process
    process.stop()
