"""Reloads under load: does a ``systemctl reload adstudio-web`` (gunicorn's HUP) drop
requests, and how long do the requests in its gap wait?

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.web_reload [--clients 20] [--reloads 3] [--workers 2]

gunicorn as README deploys it (``--workers`` uvicorn workers), and, when Debian's haproxy
is installed, haproxy in front of it configured as docs/DEPLOYMENT.md says (retries of a
request whose connection failed or was closed before any answer, on a new connection).
``--clients`` clients each send a request every 0.1 s (``GET /api/ads/`` without
credentials: the whole Django stack, answered 401; the database ``adstudio_bench_reload``
beside DATABASE_URL's, migrated), each on a new connection as a load
balancer's are, while the master is sent HUP ``--reloads`` times, 4 s apart. Printed:
per path (direct, through haproxy), the requests, those that failed (no answer, or a 5xx)
and the latency p50 / p99 / max.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from benchmarks._bench_db import (
    ROOT,
    bench_database_url,
    create_database,
    free_port,
    write_results,
)

DATABASE = "adstudio_bench_reload"

HAPROXY = """global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 65s
    timeout server 65s
    timeout check 5s
    # A request whose connection to the web process failed, or was closed before any
    # answer (a process stopping as a reload replaces it), is sent again, elsewhere.
    retries 3
    retry-on conn-failure empty-response response-timeout
    option redispatch
frontend web
    bind 127.0.0.1:{front}
    default_backend adstudio
backend adstudio
    option httpchk GET /readyz
    server web1 127.0.0.1:{back} check inter 2s
"""


def clients(base: str, count: int, stop: threading.Event) -> list[tuple[object, float]]:
    answers: list[tuple[object, float]] = []

    def one() -> None:
        # A new connection per request, as a balancer's are to its backends.
        client = httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))
        while not stop.is_set():
            started = time.monotonic()
            try:
                status: object = client.get(f"{base}/api/ads/").status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            answers.append((status, time.monotonic() - started))
            time.sleep(0.1)
        client.close()

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join()
    return answers


def summary(answers: list[tuple[object, float]]) -> dict:
    latencies = sorted(took for _, took in answers)
    failed = [s for s, _ in answers if not isinstance(s, int) or s >= 500]
    return {
        "requests": len(answers),
        "failed": len(failed),
        "failures": dict(Counter(str(s) for s in failed)),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 1),
        "max_ms": round(latencies[-1] * 1000, 1),
    }


def run(args: argparse.Namespace, work: Path, *, through_haproxy: bool) -> dict:
    back = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": bench_database_url(DATABASE),
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_ROOT": str(work / "static"),
        "ADSTUDIO_DB_POOL_MAX_SIZE": "4",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    gunicorn = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "adstudio.asgi:application"),
            *("--worker-class", "uvicorn_worker.UvicornWorker"),
            *("--workers", str(args.workers), "--bind", f"127.0.0.1:{back}"),
        ],
        cwd=ROOT,
        env=env,
        stdout=(work / "gunicorn.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    haproxy = None
    base = f"http://127.0.0.1:{back}"
    if through_haproxy:
        front = free_port()
        config = work / "haproxy.cfg"
        config.write_text(HAPROXY.format(front=front, back=back))
        haproxy = subprocess.Popen(["haproxy", "-f", str(config)], stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{front}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        stop = threading.Event()
        answers: list = []
        load = threading.Thread(target=lambda: answers.extend(clients(base, args.clients, stop)))
        load.start()
        time.sleep(3)
        for _ in range(args.reloads):
            os.kill(gunicorn.pid, signal.SIGHUP)
            time.sleep(4)
        stop.set()
        load.join()
    finally:
        if haproxy is not None:
            haproxy.terminate()
            haproxy.wait(timeout=10)
        gunicorn.terminate()
        gunicorn.wait(timeout=45)
    return summary(answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--reloads", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("Set DATABASE_URL to a PostgreSQL server.")
    work = Path(tempfile.mkdtemp(prefix="bench-web-reload-"))
    url = bench_database_url(DATABASE)  # migrated: /readyz, which haproxy checks, says so
    create_database(url)
    migrate_env = {**os.environ, "DATABASE_URL": url}
    migrate_env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=migrate_env,
        check=True,
        capture_output=True,
    )
    results: dict[str, object] = {}
    try:
        results["direct"] = run(args, work, through_haproxy=False)
        print(f"direct: {results['direct']}", flush=True)
        if shutil.which("haproxy"):
            results["haproxy"] = run(args, work, through_haproxy=True)
            print(f"through haproxy: {results['haproxy']}", flush=True)
        else:
            results["haproxy"] = "skipped: haproxy is not installed (apt-get install haproxy)"
            print(results["haproxy"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_results("web_reload", results)


if __name__ == "__main__":
    main()
