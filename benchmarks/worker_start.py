"""What a Celery worker's start costs: the CPU and memory it spends before it takes tasks.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python -m benchmarks.worker_start [--runs 5] [--broker-url URL]

Each run starts a worker as README deploys it (the thread pool; ``testbed.worker``) and
reads, when it logs `` ready.``, its CPU (user and system, from ``/proc``), its resident
memory and the seconds since its exec. Three ways, alternated run by run:

- ``deployed``: the defaults (the mix's libraries and eSpeak NG loaded at the start,
  Django's system checks run);
- ``audio later``: ``ADSTUDIO_WORKER_LOADS_AUDIO=0`` (the first render loads them);
- ``lean``: that and ``CELERY_SKIP_CHECKS=1``, as the test suite starts the workers of its
  tests that render nothing (``tests/support/worker.py``: ``LEAN_WORKER``);
- ``lean, forked``: the same, forked from a fork server that has imported the worker's
  libraries (``testbed.forkserver``), as the suite's tests start their workers. The
  server's own start is printed once, beside.

The database is only named, not used; the broker (an empty Redis database,
``ADSTUDIO_BENCH_BROKER_URL``, 14 by default) receives nothing. Prints each way's runs and
medians.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._bench_db import ROOT, claim_redis, write_results
from testbed.forkserver import ForkServer
from testbed.worker import worker_command

BROKER = os.environ.get("ADSTUDIO_BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
WAYS = {
    "deployed": {},
    "audio later": {"ADSTUDIO_WORKER_LOADS_AUDIO": "0"},
    "lean": {"ADSTUDIO_WORKER_LOADS_AUDIO": "0", "CELERY_SKIP_CHECKS": "1"},
    "lean, forked": {"ADSTUDIO_WORKER_LOADS_AUDIO": "0", "CELERY_SKIP_CHECKS": "1"},
}


def _cpu_and_rss(pid: int) -> tuple[float, float]:
    """CPU seconds (user and system) and resident MB of process ``pid``, now."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return cpu, rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def one_start(
    extra: dict[str, str], broker_url: str, server: ForkServer | None = None
) -> dict[str, float]:
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker_url,
        "OPENAI_API_KEY": "sk-bench",  # the provider SDK loaded, as on a worker host
        "ADSTUDIO_SWEEPS": "0",  # nothing of another deployment's runs is touched
        **extra,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    command = worker_command(
        concurrency=8,
        loglevel="INFO",
        extra=("-n", "bench@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"),
    )
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "worker.log"
        started = time.monotonic()
        if server is not None:
            log.write_text("")
            process = server.start(command[1:], env=env, cwd=ROOT, log=log)
        else:
            with log.open("w") as out:
                process = subprocess.Popen(
                    command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
                )
        try:
            while time.monotonic() - started < 120:
                if " ready." in log.read_text():
                    cpu, rss = _cpu_and_rss(process.pid)
                    return {"cpu_s": cpu, "rss_mb": rss, "wall_s": time.monotonic() - started}
                if process.poll() is not None:
                    raise RuntimeError(f"the worker exited:\n{log.read_text()[-3000:]}")
                time.sleep(0.02)
            raise RuntimeError("the worker was not ready within 120 s")
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--broker-url", default=BROKER, help="an empty Redis database (ADSTUDIO_BENCH_BROKER_URL)"
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL server (it is named, not used).")
    claim_redis(args.broker_url)
    started = time.monotonic()
    server = ForkServer()
    server_start = {
        "wall_s": time.monotonic() - started,
        "cpu_s": _cpu_and_rss(server.process.pid)[0],
    }
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    try:
        for _ in range(args.runs):
            for way, extra in WAYS.items():
                forked = server if way.endswith("forked") else None
                runs[way].append(one_start(extra, args.broker_url, forked))
    finally:
        server.stop()
    figures = {}
    for way, starts in runs.items():
        figures[way] = {name: [round(start[name], 2) for start in starts] for name in starts[0]} | {
            f"median_{name}": round(statistics.median(start[name] for start in starts), 2)
            for name in starts[0]
        }
        print(
            f"{way:13} CPU {figures[way]['median_cpu_s']:.2f} s {figures[way]['cpu_s']}, "
            f"resident {figures[way]['median_rss_mb']:.0f} MB, "
            f"ready after {figures[way]['median_wall_s']:.2f} s (medians of {args.runs})"
        )
    print(
        f"the fork server's own start: CPU {server_start['cpu_s']:.2f} s, "
        f"{server_start['wall_s']:.2f} s (once per test process)"
    )
    write_results("worker_start", figures | {"fork_server_start": server_start})


if __name__ == "__main__":
    main()
