"""A real Celery worker process (thread pool, Redis broker) for the tests about the
worker: it reads the test database and answers models through the fake server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("ADSTUDIO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def database_url() -> str:
    db = settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


class WorkerProcess:
    """``start()`` a worker and wait until it is ready; ``kill()`` it with SIGKILL."""

    def __init__(self, *, log_dir: Path, env: dict[str, str], concurrency: int = 8) -> None:
        self.log_dir = log_dir
        self.env = env
        self.concurrency = concurrency
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self, timeout: float = 30.0) -> None:
        self.starts += 1
        self.log = self.log_dir / f"worker-{self.starts}.log"
        env = {**os.environ, **self.env}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "adstudio",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            "8",
            "--loglevel",
            "INFO",
            "-n",
            f"test{self.starts}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.log.read_text():
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log.read_text()}")
            time.sleep(0.1)
        raise RuntimeError(f"worker not ready after {timeout} s:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL the worker and every thread and child it has: no clean-up runs."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def flush_broker() -> None:
    redis.Redis.from_url(REDIS_URL).flushdb()
