"""How soon a web process serves after it is started: what a reload's gap is made of.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python -m benchmarks.web_start [--runs 5]

Each run starts gunicorn as README deploys it (one uvicorn worker, the production
settings) on a free port and times from the exec to the first ``/healthz`` answered: the
master's start, the worker's fork and its import of the application. A reload
(``systemctl reload adstudio-web``, HUP) stops the old processes taking connections as
soon as the new ones are forked, so until they answer, requests wait in the socket's
queue. Prints each run and the median; the database is only named, not used.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import httpx

from benchmarks._bench_db import ROOT, free_port, write_results


def one_start() -> float:
    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_ROOT": tempfile.mkdtemp(prefix="bench-web-static-"),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    started = time.monotonic()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "adstudio.asgi:application"),
            *("--worker-class", "uvicorn_worker.UvicornWorker", "--bind", f"127.0.0.1:{port}"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.monotonic() - started < 120:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                time.sleep(0.01)
        raise RuntimeError("gunicorn did not answer within 120 s")
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL server (it is named, not used).")
    times = [round(one_start(), 3) for _ in range(args.runs)]
    median = round(statistics.median(times), 3)
    print(f"start to first /healthz: {times} s, median {median} s")
    write_results("web_start", {"start_to_healthz_s": times, "median_s": median})


if __name__ == "__main__":
    main()
