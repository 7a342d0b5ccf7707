"""A pytest plugin for ``benchmarks/suite.py``: how long each fixture's set-up took, and
when each test ran and what CPU it cost.

Loaded with ``-p suite_timing`` (its folder on ``PYTHONPATH``), so that any checkout's
suite can be measured with it, an older one included. Each test process (the pytest-xdist
workers, or pytest itself without them) writes ``<process>.json`` into the folder that
``SUITE_TIMING_DIR`` names: per fixture, its set-ups' seconds; per test, its start and end
(epoch seconds) and its CPU seconds, the test process's own and those of the processes it
started and reaped during the test (``resource.getrusage``: a server stopped by a
session-scoped fixture is counted where it is reaped).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

_setups: dict[str, list[float]] = defaultdict(list)
_tests: list[dict] = []


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started = time.perf_counter()
    yield
    _setups[f"{fixturedef.argname} ({fixturedef.scope})"].append(time.perf_counter() - started)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, reaped, started = *_cpu(), time.time()
    yield
    own_after, reaped_after = _cpu()
    _tests.append(
        {
            "test": item.nodeid,
            "start": started,
            "end": time.time(),
            "cpu_s": round(own_after - own, 3),
            "children_cpu_s": round(reaped_after - reaped, 3),
        }
    )


def pytest_sessionfinish(session) -> None:
    folder = os.environ.get("SUITE_TIMING_DIR")
    if not folder or not (_setups or _tests):
        return
    process = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (Path(folder) / f"{process}.json").write_text(
        json.dumps({"fixtures": _setups, "tests": _tests})
    )
