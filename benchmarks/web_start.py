"""How soon a web process serves after it is started: what a reload's gap is made of.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python -m benchmarks.web_start [--runs 5] [--forked]

Each run starts gunicorn as README deploys it (one uvicorn worker, the production
settings) on a free port and times from the exec to the first ``/healthz`` answered: the
master's start, the worker's fork and its import of the application. A reload
(``systemctl reload adstudio-web``, HUP) stops the old processes taking connections as
soon as the new ones are forked, so until they answer, requests wait in the socket's
queue. Prints each run and the median, and the CPU the master and its worker spent by
then; the database is only named, not used.

``--forked``: alternately, gunicorn executed as above and forked from a fork server that
has imported its libraries (``testbed.forkserver``), as the test suite starts its web
servers.
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

import httpx

from benchmarks._bench_db import ROOT, free_port, process_cpu_seconds, write_results
from testbed.forkserver import ForkServer


def one_start(server: ForkServer | None = None) -> dict[str, float]:
    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_ROOT": tempfile.mkdtemp(prefix="bench-web-static-"),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    command = [
        *(sys.executable, "-m", "gunicorn", "adstudio.asgi:application"),
        *("--worker-class", "uvicorn_worker.UvicornWorker", "--bind", f"127.0.0.1:{port}"),
    ]
    with tempfile.TemporaryDirectory() as folder:
        started = time.monotonic()
        if server is not None:
            process = server.start(command[1:], env=env, cwd=ROOT, log=Path(folder) / "log")
        else:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its CPU is its session's, as a forked one's
            )
        try:
            while time.monotonic() - started < 120:
                try:
                    answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    if answer.status_code == 200:
                        seconds = time.monotonic() - started
                        cpu = process_cpu_seconds(session=process.pid)
                        return {"seconds": seconds, "cpu_s": cpu}
                except httpx.TransportError:
                    time.sleep(0.01)
            raise RuntimeError("gunicorn did not answer within 120 s")
        finally:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--forked", action="store_true", help="alternate with forked starts")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL server (it is named, not used).")
    ways = ["executed", "forked"] if args.forked else ["executed"]
    server = ForkServer() if args.forked else None
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    try:
        for _ in range(args.runs):
            for way in ways:
                runs[way].append(one_start(server if way == "forked" else None))
    finally:
        if server is not None:
            server.stop()
    figures = {}
    for way, starts in runs.items():
        times = [round(start["seconds"], 3) for start in starts]
        cpu = [round(start["cpu_s"], 2) for start in starts]
        figures[way] = {
            "start_to_healthz_s": times,
            "median_s": round(statistics.median(times), 3),
            "cpu_s": cpu,
            "median_cpu_s": round(statistics.median(cpu), 2),
        }
        print(
            f"{way:8} start to first /healthz: {times} s, median {figures[way]['median_s']} s; "
            f"CPU {cpu}, median {figures[way]['median_cpu_s']} s"
        )
    write_results("web_start", figures)


if __name__ == "__main__":
    main()
