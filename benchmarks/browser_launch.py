"""What a browser test's Chromium costs: a launch, a page and a screenshot, as the suite's
browser tests do them (Playwright's sync API, ``executable_path``, headless).

    .venv/bin/python -m benchmarks.browser_launch [--runs 5] [--launches 5]

Two builds of Debian's Chromium, alternated run by run: ``chromium`` (the desktop browser,
run with ``--headless``) and ``chromium-headless-shell`` (Chromium's headless build, the
one Playwright runs headless and the suite uses: tests/support/browser.py). Each run is a
process of its own that launches the browser ``--launches`` times, each time opening a
page served on loopback (2,000 paragraphs written by a script), counting its paragraphs
and taking a screenshot. A run's CPU is what that process and everything it started spent
(user and system: the Python that drives Playwright, Playwright's driver and the
browser's processes, each waited for), read from ``getrusage`` when it has exited. A build
that is not installed is left out. Prints each run and, per build, the median CPU per
launch and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import functools
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks._bench_db import write_results

BUILDS = {
    "chromium": Path("/usr/bin/chromium"),
    "chromium-headless-shell": Path("/usr/bin/chromium-headless-shell"),
}
PARAGRAPHS = 2000
PAGE = (
    "<!doctype html><html><head><title>bench</title></head><body><main id=rows></main>"
    "<script>const rows = document.getElementById('rows');"
    f"for (let i = 0; i < {PARAGRAPHS}; i++) {{"
    "const p = document.createElement('p'); p.textContent = 'row ' + i; rows.append(p); }"
    "</script></body></html>"
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def launches(executable: str, count: int) -> None:
    """In a process of its own: ``count`` launches, each with its page and screenshot."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="browser-launch-") as folder:
        (Path(folder) / "page.html").write_text(PAGE)
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=folder))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/page.html"
        with sync_playwright() as playwright:
            for _ in range(count):
                browser = playwright.chromium.launch(executable_path=executable, headless=True)
                try:
                    page = browser.new_context().new_page()
                    page.goto(url)
                    found = page.locator("p").count()
                    if found != PARAGRAPHS:
                        sys.exit(f"{executable}: {found} paragraphs, not {PARAGRAPHS}")
                    page.screenshot(path=str(Path(folder) / "page.png"))
                finally:
                    browser.close()
        server.shutdown()


def one_run(executable: Path, count: int) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    child = ["--child", str(executable), "--launches", str(count)]
    subprocess.run([sys.executable, "-m", "benchmarks.browser_launch", *child], check=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_per_launch_s": cpu / count, "wall_per_launch_s": wall / count}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--launches", type=int, default=5, help="per run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.launches < 1:
        parser.error("--runs and --launches must be at least 1")
    if args.child:
        launches(args.child, args.launches)
        return 0

    builds = {name: path for name, path in BUILDS.items() if path.exists()}
    if not builds:
        sys.exit("neither build is installed: apt-get install chromium-headless-shell")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in builds}
    for number in range(1, args.runs + 1):
        for name, path in builds.items():
            run = one_run(path, args.launches)
            runs[name].append(run)
            print(
                f"run {number} {name:<24} CPU {run['cpu_per_launch_s']:.3f} s, "
                f"wall {run['wall_per_launch_s']:.3f} s per launch"
            )
    medians = {
        name: {key: statistics.median(r[key] for r in found) for key in found[0]}
        for name, found in runs.items()
    }
    print(f"medians of {args.runs} runs of {args.launches} launches (a page and a screenshot):")
    for name, median in medians.items():
        print(
            f"  {name:<24} CPU {median['cpu_per_launch_s']:.3f} s, "
            f"wall {median['wall_per_launch_s']:.3f} s per launch"
        )
    if len(medians) == 2:
        ratio = (
            medians["chromium-headless-shell"]["cpu_per_launch_s"]
            / medians["chromium"]["cpu_per_launch_s"]
        )
        print(f"  headless shell / desktop build, CPU: {ratio:.2f}")

    path = write_results(
        "browser_launch",
        {"runs": runs, "medians": medians, "launches_per_run": args.launches},
    )
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
