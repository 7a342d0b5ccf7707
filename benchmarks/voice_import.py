"""Import time of a 100,000-voice catalogue through ``manage.py import_voices``.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.voice_import [--voices 100000] [--runs 3]

For each format (our JSON, our CSV, the ElevenLabs export) it empties the voices table of
a database of its own (``adstudio_bench_import``), runs the command as an operator would
(a fresh process, so Django start-up is included), then runs it again on the same file
(every row unchanged). Prints medians over runs with peak memory; writes JSON results to
benchmarks/results/.

``--fresh`` drops and re-creates that database before every first import, as a new
deployment sees it: a table that has never held rows, whose planner statistics an earlier
import cannot have left behind (``TRUNCATE`` keeps them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from benchmarks._bench_db import (
    ROOT,
    bench_database_url,
    create_database,
    machine,
    migrate,
    setup_django,
    write_results,
)

FORMATS = ("json", "csv", "elevenlabs")


def run_command(url: str, path: Path, *options: str) -> tuple[float, int, str, float]:
    """Seconds, the process's peak RSS in MiB, the command's last output line, and the
    process's CPU seconds (user + system: less moved by other load on a shared machine
    than the wall clock, though PostgreSQL's share of the work is not in it)."""
    env = dict(os.environ, DATABASE_URL=url)
    command = [sys.executable, "manage.py", "import_voices", str(path), *options]
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().strip()
    if process.returncode:
        sys.exit(f"import_voices failed ({process.returncode}):\n{output}")
    cpu_seconds = usage.ru_utime + usage.ru_stime
    return seconds, round(usage.ru_maxrss / 1024), output.splitlines()[-1], cpu_seconds


def recreate_database(url: str) -> None:
    """Drop the benchmark's database and create it again, migrated and vacuumed as
    ``setup_django`` leaves it. Refuses (as PostgreSQL does) while another session uses it."""
    import psycopg
    from django.db import connection

    connection.close()
    if getattr(connection, "pool", None) is not None:
        connection.close_pool()  # its idle connections would keep the database in use
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        except psycopg.errors.ObjectInUse as exc:
            first_line = str(exc).splitlines()[0]
            sys.exit(f"Cannot drop {name} for --fresh: {first_line}; close those sessions first.")
    create_database(url)
    migrate(url)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Voice import benchmark.")
    parser.add_argument("--voices", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--database", default="adstudio_bench_import")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="Drop and re-create the database before each first import (a table with no "
        "planner statistics), instead of emptying its voices table.",
    )
    args = parser.parse_args(argv)

    url = bench_database_url(args.database)
    create_database(url)
    setup_django(url)
    from django.db import connection

    from benchmarks.catalogue_generator import generate, write

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for file_format in args.formats:
            path = Path(tmp) / f"catalogue.{file_format}"
            with path.open("w", encoding="utf-8", newline="") as out:
                write(generate(args.voices, args.seed, f"bench-{file_format}"), out, file_format)
            size_mib = path.stat().st_size / 2**20
            first, again = [], []
            for _ in range(args.runs):
                if args.fresh:
                    recreate_database(url)
                else:
                    with connection.cursor() as cursor:
                        cursor.execute("TRUNCATE voices_voice RESTART IDENTITY")
                first.append(run_command(url, path, "--approve"))
                again.append(run_command(url, path))
            results[file_format] = {
                "file_mib": round(size_mib, 1),
                "first_import_s": round(statistics.median(r[0] for r in first), 2),
                "reimport_unchanged_s": round(statistics.median(r[0] for r in again), 2),
                "peak_rss_mib": max(r[1] for r in first + again),
                "first_output": first[-1][2],
                "reimport_output": again[-1][2],
                "runs_s": {"first": [round(r[0], 2) for r in first],
                           "again": [round(r[0], 2) for r in again]},
                "first_import_cpu_s": round(statistics.median(r[3] for r in first), 2),
                "reimport_unchanged_cpu_s": round(statistics.median(r[3] for r in again), 2),
            }  # fmt: skip
            row = results[file_format]
            print(
                f"{file_format:11} {row['file_mib']:6.1f} MiB  first import "
                f"{row['first_import_s']:6.2f} s  re-import {row['reimport_unchanged_s']:6.2f} s"
                f"  peak RSS {row['peak_rss_mib']} MiB  (import process CPU "
                f"{row['first_import_cpu_s']:.2f} s / {row['reimport_unchanged_cpu_s']:.2f} s)"
            )
            print(f"            {row['first_output']}\n            {row['reimport_output']}")
    path = write_results(
        "voice_import",
        {
            "benchmark": "voice_import",
            "command": "python -m benchmarks.voice_import " + " ".join(sys.argv[1:]),
            "voices": args.voices,
            "runs": args.runs,
            "fresh_database": args.fresh,
            "machine": machine(),
            "formats": results,
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
