"""``manage.py collectstatic`` as a web host runs it at every deploy and reload
(deploy/systemd/adstudio-web.service): its CPU time, wall time and what it writes.

    .venv/bin/python -m benchmarks.collectstatic [--runs 5] [--tree PATH]

Each run collects into a new, empty ``STATIC_ROOT`` with the production storage (hashed
names, precompressed), in a process of its own; ``--tree`` runs another checkout's (an
older commit's, to compare in the same minutes). Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._bench_db import ROOT, write_results


def collect(tree: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "DEBUG": "0", "STATIC_ROOT": directory}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
            cwd=tree,
            env=env,
            check=True,
        )
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        files = [path for path in Path(directory).rglob("*") if path.is_file()]
        return {
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "wall_s": wall,
            "files": len(files),
            "megabytes": sum(path.stat().st_size for path in files) / 1e6,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=ROOT)
    args = parser.parse_args()
    runs = []
    for n in range(1, args.runs + 1):
        run = collect(args.tree)
        runs.append(run)
        print(
            f"run {n}: {run['cpu_s']:.2f} CPU-s, {run['wall_s']:.2f} s, "
            f"{run['files']} files, {run['megabytes']:.1f} MB"
        )
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(
        f"median: {medians['cpu_s']:.2f} CPU-s, {medians['wall_s']:.2f} s, "
        f"{medians['files']:.0f} files, {medians['megabytes']:.1f} MB"
    )
    write_results("collectstatic", {"tree": str(args.tree), "runs": runs, "medians": medians})


if __name__ == "__main__":
    main()
