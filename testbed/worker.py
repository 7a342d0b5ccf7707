"""A real Celery worker in a process of its own, started as README deploys it (the thread
pool), for the tests about the worker and for the benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from testbed.forkserver import ForkedProcess, launch

ROOT = Path(__file__).resolve().parent.parent


def worker_command(
    *, concurrency: int, loglevel: str, extra: tuple[str, ...] = (), quiet: bool = False
) -> list[str]:
    """A Celery worker with the thread pool, as README deploys it; ``quiet``: without the
    start-up banner, as with JSON logs."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "adstudio",
        *(["--quiet"] if quiet else []),
        "worker",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "--loglevel",
        loglevel,
        *extra,
    ]


class WorkerProcess:
    """``start()`` a worker and wait until it is ready; ``kill()`` it with SIGKILL."""

    def __init__(
        self,
        *,
        log_dir: Path,
        env: dict[str, str],
        concurrency: int = 8,
        name: str = "test",
        quiet: bool = False,
        args: tuple[str, ...] = (),
        forked: bool = False,
    ) -> None:
        """``args``: more of the worker's command line. ``forked``: from this process's
        fork server (``testbed.forkserver``), which has imported the worker's libraries,
        where the environment allows; a new interpreter otherwise."""
        self.name = name
        self.forked = forked
        self.args = args
        self.quiet = quiet
        self.log_dir = log_dir
        self.env = env
        self.concurrency = concurrency
        self.process: subprocess.Popen | ForkedProcess | None = None
        self.starts = 0

    def start(self, timeout: float = 30.0) -> None:
        self.starts += 1
        self.log = self.log_dir / f"worker-{self.name}{self.starts}.log"
        env = {**os.environ, **self.env}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        command = worker_command(
            concurrency=self.concurrency,
            loglevel="INFO",
            quiet=self.quiet,
            extra=(
                "-n",
                f"{self.name}{self.starts}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                *self.args,
            ),
        )
        self.process = launch(command, env=env, cwd=ROOT, log=self.log, forked=self.forked)
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
