"""A pytest plugin for ``benchmarks/suite.py``: how long each fixture's set-up took.

Loaded with ``-p suite_timing`` (its folder on ``PYTHONPATH``), so that any checkout's
suite can be measured with it, an older one included. Each test process (the pytest-xdist
workers, or pytest itself without them) writes ``<process>.json`` into the folder that
``SUITE_TIMING_DIR`` names: per fixture, how many set-ups and their seconds.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

_setups: dict[str, list[float]] = defaultdict(list)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started = time.perf_counter()
    yield
    _setups[f"{fixturedef.argname} ({fixturedef.scope})"].append(time.perf_counter() - started)


def pytest_sessionfinish(session) -> None:
    folder = os.environ.get("SUITE_TIMING_DIR")
    if not folder or not _setups:
        return
    process = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (Path(folder) / f"{process}.json").write_text(json.dumps(_setups))
