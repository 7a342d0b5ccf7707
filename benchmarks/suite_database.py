"""What a test process's database costs: migrated anew, or copied from the migrated template
(tests/support/template_database.py), as the suite makes it now.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.suite_database [--runs 5]

Each run creates a test database as pytest-django does (``create_test_db``) in a Python
process of its own, Django already set up, and reads that process's CPU (all its threads)
and the seconds the creation took; then drops it. The two ways alternate run by run, so
that both see the same minutes of this machine. The template is made first if this code
has none yet (not counted). Prints each way's runs and medians, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks._bench_db import ROOT, bench_database_url, reference_loop_ms, write_results

WAYS = ("migrated", "copied")


def one(way: str) -> dict[str, float]:
    """In this process: create (and drop) the test database one ``way``; its costs."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection

    from tests.support import template_database

    connection.settings_dict["TEST"]["NAME"] = bench_database_url("adstudio_bench_testdb").rsplit(
        "/", 1
    )[1]
    if way == "copied":
        template_database.use_template()  # exists already: a lock, a look, a comment
    cpu, started = time.process_time(), time.perf_counter()
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    figures = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - started}
    connection.creation.destroy_test_db(name, verbosity=0)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    if args.runs < 1:
        parser.error("--runs: at least 1")
    env = {**os.environ, "DATABASE_URL": os.environ.get("DATABASE_URL", "")}
    bench_database_url()  # exits with a message when DATABASE_URL is not PostgreSQL
    prepare = "from benchmarks.suite_database import one; one('copied')"
    subprocess.run([sys.executable, "-c", prepare], cwd=ROOT, env=env, check=True)
    reference = reference_loop_ms()
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for _ in range(args.runs):
        for way in WAYS:
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.suite_database", "--one", way],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[way].append(json.loads(out.strip().splitlines()[-1]))
    print(f"reference loop {reference:.0f} ms at the start")
    medians = {}
    for way in WAYS:
        cpu = [r["cpu_s"] for r in runs[way]]
        wall = [r["wall_s"] for r in runs[way]]
        medians[way] = {"cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall)}
        print(
            f"{way:>9}: CPU {', '.join(f'{c:.2f}' for c in cpu)} s (median "
            f"{medians[way]['cpu_s']:.2f}); {medians[way]['wall_s']:.2f} s median wall"
        )
    ratio = medians["copied"]["cpu_s"] / medians["migrated"]["cpu_s"]
    print(f"copied / migrated, CPU: {ratio:.2f}")
    path = write_results(
        "suite_database",
        {"runs": runs, "medians": medians, "ratio_cpu": ratio, "reference_ms": reference},
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
