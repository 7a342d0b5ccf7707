"""The golden set's offline evaluation, timed: ``manage.py evaluate`` on the demo director.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.evaluate [--runs 3] [--concurrency 1]
        [--dataset evals/dev.yaml --dataset evals/held_out.yaml] [--render]

Each run is the command as a person types it, in a process of its own, on a database of
the benchmark's own (created, migrated, the sample catalogue imported) with no broker
(runs execute in the command's process) and no provider key (the demo director), with
the suite's bars (dev: every result; held_out: 90% of cases whole). Prints each run's
wall time, verdict and each set's share of cases passed, and the median. The bars: the
whole set in < 60 s; held_out >= 90% of cases, dev 100%. ``--render`` renders each ad
and scores its measured speech (``ScriptFitsSlot``, printed per set), with no bar: the
guide voice is not the cast voices, and the wall time is then the renders'.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from benchmarks._bench_db import ROOT, bench_django, machine, write_results

DATABASE = "adstudio_bench_evaluate"
KEYS = ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "ANTHROPIC_API_KEY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--dataset", action="append", default=None)
    parser.add_argument("--render", action="store_true", help="score each ad's scratch track")
    args = parser.parse_args()
    args.dataset = args.dataset or ["evals/dev.yaml", "evals/held_out.yaml"]
    for name in ("CELERY_BROKER_URL", *KEYS):
        os.environ.pop(name, None)
    url = bench_django(DATABASE)
    from benchmarks.agent_loop import import_sample_catalogue_if_empty

    import_sample_catalogue_if_empty()
    env = {**os.environ, "DATABASE_URL": url}
    command = [
        sys.executable,
        "manage.py",
        "evaluate",
        *(part for path in args.dataset for part in ("--dataset", path)),
        "--concurrency",
        str(args.concurrency),
        "--require",
        "dev:all=1" if "evals/dev.yaml" in args.dataset and not args.render else "all=0",
        *(
            ["--require", "held_out:cases passed=0.9"]
            if "evals/held_out.yaml" in args.dataset and not args.render
            else []
        ),
        *(["--render"] if args.render else []),
    ]
    times, passed = [], {}
    for n in range(1, args.runs + 1):
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        times.append(seconds)
        verdict = "every threshold met" if done.returncode == 0 else f"exit {done.returncode}"
        passed = dict(re.findall(r"Finished: (\w+),.*?cases passed\s+(\d+%)", done.stdout, re.S))
        fits = dict(re.findall(r"Finished: (\w+),.*?ScriptFitsSlot\s+(\d+%)", done.stdout, re.S))
        print(
            f"run {n}: {seconds:.1f} s, {verdict}; cases passed: {passed}; ScriptFitsSlot: {fits}"
        )
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
    median = statistics.median(times)
    print(f"median {median:.1f} s over {args.runs} runs (bar: < 60 s)")
    write_results(
        "evaluate",
        {
            "runs_s": [round(t, 2) for t in times],
            "median_s": round(median, 2),
            "concurrency": args.concurrency,
            "datasets": args.dataset,
            "cases_passed": passed,
            "script_fits_slot": fits,
            "render": args.render,
            "machine": machine(),
        },
    )


if __name__ == "__main__":
    main()
