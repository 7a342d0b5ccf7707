"""A real Celery worker process (thread pool, Redis broker) for the tests about the
worker: it reads the test database and answers models through the fake server; and a
private Redis server that a test may stop and start again."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import redis
from django.conf import settings
from django.utils import timezone

from testbed.lifetime import tethered
from tests.support.parallel import address_taken, free_port, redis_url_of_this_process

ROOT = Path(__file__).resolve().parents[2]
# The shared Redis, in the database of this test process's own (tests.support.parallel).
REDIS_URL = redis_url_of_this_process(
    os.environ.get("ADSTUDIO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
)

# What a test's worker that renders nothing leaves out of its start (its CPU 1.97 -> 1.06 s,
# benchmarks/worker_start.py): the audio libraries, which wait for a first render instead,
# and Django's system checks, which the suite runs itself (``call_command("check")`` in
# tests/adstudio/test_settings.py) rather than at each of its fifty-odd worker starts.
LEAN_WORKER = {"ADSTUDIO_WORKER_LOADS_AUDIO": "0", "CELERY_SKIP_CHECKS": "1"}


def database_url() -> str:
    db = settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def flush_broker(url: str = REDIS_URL) -> None:
    redis.Redis.from_url(url).flushdb()


class RedisServer:
    """A Redis of the test's own on a free loopback port, without persistence, so that
    stopping it loses every message it held, as a restart of an in-memory broker does.
    The machine's shared Redis is never touched."""

    def __init__(self, *, log_dir: Path) -> None:
        self.port = free_port()
        self.log_dir = log_dir
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self._port_known = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start on ``port``. Until a start has succeeded, a port that another process
        took since it was chosen is traded for a new one; after that, clients know it."""
        for _ in range(5):
            self.starts += 1
            log = self.log_dir / f"redis-{self.starts}.log"
            if self._started(log, timeout):
                self._port_known = True
                return
            if self._port_known or not address_taken(log.read_text()):
                break
            self.port = free_port()
        raise RuntimeError(f"redis-server exited early:\n{log.read_text()}")

    def _started(self, log: Path, timeout: float) -> bool:
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ]
        with log.open("w") as out:
            self.process = subprocess.Popen(tethered(command), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with redis.Redis(host="127.0.0.1", port=self.port) as client:
                    if client.info("server")["process_id"] == self.process.pid:
                        return True  # ours, not another process's on the same port
            except redis.ConnectionError:
                pass
            if self.process.poll() is not None:
                return False
            time.sleep(0.01)
        raise RuntimeError(f"redis-server not answering after {timeout} s:\n{log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    @contextmanager
    def down(self) -> Iterator[None]:
        """Stopped inside the block and started again (same port, empty) when it ends,
        whether or not the block failed."""
        self.stop()
        try:
            yield
        finally:
            self.start()


def wait_until_finished(run, timeout: float = 30.0):
    """``run`` (a ``Run``), re-read once it has finished: woken by its events as they
    commit (``LISTEN``), as the API's ``?wait=`` is, not polled."""
    from conversations.events.waits import run_wait
    from conversations.models import RunStatus

    run_wait(run=run, timeout=timeout)
    if run.status not in RunStatus.finished():
        raise AssertionError(f"run {run.pk} still {run.status} after {timeout} s")
    return run


def heartbeat_stale(run, stale_after: float) -> bool:
    """Whether the recovery sweep takes ``run``'s worker for dead: no heartbeat for
    ``stale_after`` seconds."""
    from conversations.models import Run

    limit = timezone.now() - timedelta(seconds=stale_after)
    return Run.objects.filter(pk=run.pk, heartbeat_at__lt=limit).exists()


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, what: str = "condition"):
    """``predicate()``'s first true value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
