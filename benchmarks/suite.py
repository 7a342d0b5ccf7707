"""The test suite's own speed: README's test command and CI's script, timed.

    .venv/bin/python -m benchmarks.suite make [--runs 3] [--target test] [--tree PATH]
        [--hog] [--processes N]
    .venv/bin/python -m benchmarks.suite ci [--runs 1] [--ref main] [--without-chromium]

``make``: runs ``make TARGET`` (``test``, or ``test-fast``) in this checkout or in
``--tree`` (another checkout, e.g. an older commit's, to compare in the same minutes),
``--runs`` times one after the other, with ``--durations=25`` and a plugin that times
every fixture's set-up and records each test's span and CPU
(benchmarks/pytest_plugins/suite_timing.py). Prints, per run and as medians: the wall
time of the command, pytest's own time, the outcome; then the slowest 25 set-ups, calls
and teardowns of the last run, when each test process ran tests, the tests' CPU and the
test files that cost the most, the CPU of the suite's processes by kind (its test
processes, workers, web servers, databases, Chromium, node: benchmarks/process_cpu.py),
and the fixtures whose set-ups cost most in all (summed over the test processes, so they
may add up to more than the wall time). ``--hog`` keeps two busy loops running beside the
suite, as a loaded machine would. ``--processes`` sets ``TEST_PROCESSES`` (the Makefile's
default: one per core and two more).

``ci``: clones ``--ref`` of this repository into a new folder and times
``CI=true bash .ci/run`` there, as CI runs it on a clean clone (the virtualenv, npm ci
and the suite; the Debian packages only where missing: ``--without-chromium`` removes
chromium-headless-shell and chromium-common first, so that their installation is timed
too; the desktop build, which needs chromium-common, goes with them).

Results also go to benchmarks/results/, with what each command printed. The machine is
noisy: compare medians of runs taken in the same minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.process_cpu import ProcessCPU

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "benchmarks" / "pytest_plugins"
RESULTS = ROOT / "benchmarks" / "results"
SUMMARY = re.compile(r"=+ (?P<outcome>.*) in (?P<seconds>[\d.]+)s")
DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S.*)$")


def machine() -> dict[str, object]:
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {
        "cores": os.cpu_count() or 0,
        "cpu": cpu,
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


@contextmanager
def busy_loops(count: int):
    """``count`` processes spinning on a core each while the block runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def run_make(tree: Path, target: str, processes: str | None) -> dict:
    """One ``make TARGET`` in ``tree``: its wall time, pytest's summary, its durations and
    the fixtures' set-up seconds."""
    with tempfile.TemporaryDirectory(prefix="suite-timing-") as timing:
        env = {
            **os.environ,
            "SUITE_TIMING_DIR": timing,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")])
            ),
            "PYTEST_ARGS": "--durations=25 -p suite_timing -p no:cacheprovider",
        }
        if processes is not None:
            env["TEST_PROCESSES"] = processes
        started = time.perf_counter()
        with ProcessCPU(os.getpid()) as polled:
            done = subprocess.run(
                ["make", target], cwd=tree, env=env, capture_output=True, text=True, timeout=3600
            )
        wall = time.perf_counter() - started
        fixtures: dict[str, list[float]] = defaultdict(list)
        tests: dict[str, list[dict]] = {}
        for path in Path(timing).glob("*.json"):
            recorded = json.loads(path.read_text())
            for name, seconds in recorded["fixtures"].items():
                fixtures[name].extend(seconds)
            tests[path.stem] = recorded["tests"]
    output = done.stdout + done.stderr
    summary = None
    for match in SUMMARY.finditer(output):
        summary = match
    durations = [m.groupdict() for m in map(DURATION.match, output.splitlines()) if m]
    return {
        "output": str(write_output("suite_make", output)),
        "exit_status": done.returncode,
        "wall_s": round(wall, 1),
        "pytest_s": float(summary["seconds"]) if summary else None,
        "outcome": summary["outcome"] if summary else output[-2000:],
        "slowest": [
            {"seconds": float(d["seconds"]), "phase": d["phase"], "test": d["test"]}
            for d in durations
        ],
        "fixtures": {
            name: {"setups": len(seconds), "total_s": round(sum(seconds), 2),
                   "max_s": round(max(seconds), 2)}
            for name, seconds in fixtures.items()
        },
        "processes": where_the_time_went(tests),
        "cpu_by_kind": polled.by_kind(),
    }  # fmt: skip


def where_the_time_went(tests: dict[str, list[dict]], top: int = 15) -> dict:
    """From the plugin's per-test records of each test process: when each process ran
    tests (its first test's start to its last test's end, seconds after the earliest
    start), the tests' CPU (their processes' own and what they started and reaped), and
    the test files whose tests cost the most CPU, in all and in the test processes alone."""
    records = [record for process in tests.values() for record in process]
    if not records:
        return {}
    first = min(record["start"] for record in records)
    spans = {
        process: {
            "tests": len(rows),
            "from_s": round(min(r["start"] for r in rows) - first, 1),
            "to_s": round(max(r["end"] for r in rows) - first, 1),
            "busy_s": round(sum(r["end"] - r["start"] for r in rows), 1),
        }
        for process, rows in sorted(tests.items())
        if rows
    }
    by_file: dict[str, float] = defaultdict(float)
    own_by_file: dict[str, float] = defaultdict(float)
    for record in records:
        name = record["test"].split("::")[0]
        by_file[name] += record["cpu_s"] + record["children_cpu_s"]
        own_by_file[name] += record["cpu_s"]

    def most(costs: dict[str, float]) -> list[dict]:
        ranked = sorted(costs.items(), key=lambda kv: -kv[1])[:top]
        return [{"file": name, "cpu_s": round(cpu, 1)} for name, cpu in ranked]

    return {
        "spans": spans,
        "cpu_s": round(sum(r["cpu_s"] for r in records), 1),
        "children_cpu_s": round(sum(r["children_cpu_s"] for r in records), 1),
        "files": most(by_file),
        "files_own": most(own_by_file),
    }


def report_make(runs: list[dict], top: int = 15) -> None:
    for n, run in enumerate(runs, 1):
        print(
            f"run {n}: make {run['wall_s']} s, pytest {run['pytest_s']} s, "
            f"exit {run['exit_status']}: {run['outcome']}"
        )
    walls = [r["wall_s"] for r in runs]
    pytests = [r["pytest_s"] for r in runs if r["pytest_s"] is not None]
    print(f"median of {len(runs)}: make {statistics.median(walls):.1f} s", end="")
    print(f", pytest {statistics.median(pytests):.1f} s" if pytests else "")
    last = runs[-1]
    print("\nslowest 25 (last run):")
    for item in last["slowest"]:
        print(f"  {item['seconds']:6.2f} s {item['phase']:<8} {item['test']}")
    processes = last.get("processes") or {}
    if processes:
        print("\ntest processes (last run; seconds after the first test's start):")
        for name, span in processes["spans"].items():
            print(
                f"  {name}: {span['tests']} tests from {span['from_s']} to {span['to_s']} s, "
                f"busy {span['busy_s']} s"
            )
        print(
            f"tests' CPU: {processes['cpu_s']} s in the test processes, "
            f"{processes['children_cpu_s']} s in the processes they started"
        )
        print("test files, most CPU (theirs and their processes'):")
        for item in processes["files"]:
            print(f"  {item['cpu_s']:7.1f} s  {item['file']}")
        print("test files, most CPU of the test processes' own:")
        for item in processes.get("files_own", []):
            print(f"  {item['cpu_s']:7.1f} s  {item['file']}")
    by_kind = last.get("cpu_by_kind") or {}
    if by_kind:
        total = sum(kind["cpu_s"] for kind in by_kind.values())
        print(f"\nCPU by kind of process (last run, /proc polled): {total:.0f} s in all")
        for name, kind in by_kind.items():
            print(f"  {kind['cpu_s']:7.1f} s  {kind['processes']:4d} processes  {name}")
    print(f"\nfixture set-ups, most seconds in all (last run, top {top}):")
    ranked = sorted(last["fixtures"].items(), key=lambda kv: -kv[1]["total_s"])
    for name, cost in ranked[:top]:
        print(
            f"  {cost['total_s']:7.2f} s  {cost['setups']:4d} set-ups, "
            f"at most {cost['max_s']:5.2f} s  {name}"
        )


def run_ci(ref: str, without_chromium: bool) -> dict:
    """``.ci/run`` on a fresh clone of ``ref``."""
    if without_chromium:
        subprocess.run(
            ["apt-get", "remove", "-y", "-qq", "chromium-headless-shell", "chromium-common"],
            check=True,
            capture_output=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    with tempfile.TemporaryDirectory(prefix="suite-ci-") as folder:
        clone = Path(folder) / "clone"
        subprocess.run(
            ["git", "clone", "--quiet", "--branch", ref, str(ROOT), str(clone)], check=True
        )
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        started = time.perf_counter()
        done = subprocess.run(
            ["bash", ".ci/run"],
            cwd=clone,
            env={**env, "CI": "true"},
            capture_output=True,
            text=True,
            timeout=3600,
        )
        wall = time.perf_counter() - started
    output = done.stdout + done.stderr
    summary = None
    for match in SUMMARY.finditer(output):
        summary = match
    return {
        "output": str(write_output("suite_ci", output)),
        "exit_status": done.returncode,
        "wall_s": round(wall, 1),
        "pytest_s": float(summary["seconds"]) if summary else None,
        "outcome": summary["outcome"] if summary else output[-2000:],
        "installed_chromium": "Installing Debian's" in output,
    }


def write_output(name: str, text: str) -> Path:
    """What the command printed, kept beside the results (a failure's details)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    path = RESULTS / f"{name}-{stamp}.log"
    path.write_text(text)
    return path


def write_results(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{name}-{stamp}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    make = modes.add_parser("make", help="time README's test command")
    make.add_argument("--runs", type=int, default=3)
    make.add_argument("--target", choices=("test", "test-fast"), default="test")
    make.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run it in")
    make.add_argument("--hog", action="store_true", help="two busy loops beside the suite")
    make.add_argument("--processes", help="TEST_PROCESSES (default: the Makefile's)")
    ci = modes.add_parser("ci", help="time .ci/run on a clean clone")
    ci.add_argument("--runs", type=int, default=1)
    ci.add_argument("--ref", default="main")
    ci.add_argument("--without-chromium", action="store_true")
    args = parser.parse_args()

    if args.mode == "make":
        runs = []
        with busy_loops(2 if args.hog else 0):
            for _ in range(args.runs):
                runs.append(run_make(args.tree.resolve(), args.target, args.processes))
                print(f"run {len(runs)}: {runs[-1]['wall_s']} s, {runs[-1]['outcome']}", flush=True)
        print()
        report_make(runs)
        result = {
            "machine": machine(),
            "args": {**vars(args), "tree": str(args.tree)},
            "runs": runs,
        }
        print(f"\nresults: {write_results(f'suite_{args.target}', result)}")
    else:
        runs = [run_ci(args.ref, args.without_chromium) for _ in range(args.runs)]
        for n, run in enumerate(runs, 1):
            print(
                f"run {n}: .ci/run {run['wall_s']} s (pytest {run['pytest_s']} s, chromium "
                f"{'installed' if run['installed_chromium'] else 'present'}), "
                f"exit {run['exit_status']}: {run['outcome']}"
            )
        result = {"machine": machine(), "args": vars(args), "runs": runs}
        print(f"\nresults: {write_results('suite_ci', result)}")
    if any(run["exit_status"] for run in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
