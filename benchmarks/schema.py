"""The OpenAPI schema's cost to the web process that serves it: its first request, which
generates it, and the requests after, which a process serves as generated.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.schema [--requests 20] [--runs 3]

Each run is a new process (Django as a web process configures it; the benchmark's
database, ``adstudio_bench_schema``, is migrated but not read): ``GET /api/schema/``
through the whole middleware stack with the test client, timed in the process's CPU
time, first as JSON, then JSON and YAML in turn. Prints the first request and the median
of the later ones of each format, per run; then the medians of the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks._bench_db import (
    ROOT,
    bench_database_url,
    create_database,
    machine,
    setup_django,
    write_results,
)

JSON, YAML = "application/vnd.oai.openapi+json", "application/vnd.oai.openapi"


def one_process(requests: int) -> dict[str, float]:
    """In this process: CPU milliseconds of the first request and of the next ones."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "localhost")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.test import Client

    client = Client(HTTP_HOST="localhost")

    def timed(accept: str) -> float:
        started = time.process_time()
        answer = client.get("/api/schema/", HTTP_ACCEPT=accept)
        spent = (time.process_time() - started) * 1000
        if answer.status_code != 200:
            raise SystemExit(f"GET /api/schema/ answered {answer.status_code}")
        return spent

    first = timed(JSON)
    later = {JSON: [], YAML: []}
    for n in range(requests):
        accept = JSON if n % 2 == 0 else YAML
        later[accept].append(timed(accept))
    return {
        "first_ms": first,
        "json_ms": statistics.median(later[JSON]),
        "yaml_ms": statistics.median(later[YAML]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20, help="requests after the first")
    parser.add_argument("--runs", type=int, default=3, help="processes, one after another")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.requests)))
        return 0
    url = bench_database_url("adstudio_bench_schema")
    create_database(url)
    setup_django(url)  # migrated once here; the children read the same environment
    runs = []
    for n in range(args.runs):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.schema",
                "--child",
                "--requests",
                str(args.requests),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        run = runs[-1]
        print(
            f"run {n + 1}: first request {run['first_ms']:.1f} ms of CPU; then JSON "
            f"{run['json_ms']:.2f} ms, YAML {run['yaml_ms']:.2f} ms (medians)"
        )
    medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(
        f"median of {args.runs}: first {medians['first_ms']:.1f} ms, then JSON "
        f"{medians['json_ms']:.2f} ms, YAML {medians['yaml_ms']:.2f} ms a request"
    )
    write_results("schema", {"machine": machine(), "runs": runs, **medians})
    return 0


if __name__ == "__main__":
    sys.exit(main())
