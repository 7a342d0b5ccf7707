"""The test modules' assertions are rewritten once, by pytest-xdist's controller, before
its test processes start (``tests/support/rewrite_cache.py``): on a fresh clone the
processes read the rewritten modules rather than each rewriting them all again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# In each test process, note every module pytest rewrites itself (no cached rewrite found):
# the project's, and on a new virtualenv the pytest plugins' own that only they import.
COUNTING_CONFTEST = """
import os

import _pytest.assertion.rewrite as rewrite


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        rewrite_test = rewrite._rewrite_test

        def noted(path, config):
            with open(os.environ["REWRITTEN_LOG"], "a") as log:
                log.write(str(path) + "\\n")
            return rewrite_test(path, config)

        rewrite._rewrite_test = noted
"""


def _pytest(project: Path, *plugins: str) -> subprocess.CompletedProcess:
    """pytest with two test processes in ``project``, with ``plugins``; each module a test
    process rewrites itself is noted in ``project/rewritten.log``."""
    log = project / "rewritten.log"
    log.write_text("")
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-n", "2", "-rA"),
            *("-p", "no:cacheprovider", "-p", "no:django", "-p", "no:randomly"),
            *(part for plugin in plugins for part in ("-p", plugin)),
        ],
        cwd=project,
        env={**env, "PYTHONPATH": str(ROOT), "REWRITTEN_LOG": str(log), "PYTEST_ADDOPTS": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _run(project: Path, *plugins: str) -> tuple[list[str], list[str]]:
    """The tests two test processes pass in ``project``, and the project's modules they
    rewrote."""
    done = _pytest(project, *plugins)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = sorted(
        line.split()[1] for line in done.stdout.splitlines() if line.startswith("PASSED ")
    )
    rewritten = [Path(line) for line in (project / "rewritten.log").read_text().splitlines()]
    return passed, sorted(path.name for path in rewritten if path.is_relative_to(project))


def _project(path: Path) -> Path:
    (path / "tests" / "inner").mkdir(parents=True)
    (path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (path / "conftest.py").write_text(COUNTING_CONFTEST)
    (path / "tests" / "test_outer.py").write_text("def test_outer():\n    assert 1 + 1 == 2\n")
    (path / "tests" / "inner" / "conftest.py").write_text("LIMIT = 3\n")
    (path / "tests" / "inner" / "test_inner.py").write_text(
        "def test_inner():\n    assert [1, 2] != [2, 1]\n"
    )
    return path


@pytest.mark.slow
def test_the_test_processes_rewrite_nothing_the_controller_rewrote(tmp_path):
    tests = ["tests/inner/test_inner.py::test_inner", "tests/test_outer.py::test_outer"]
    # Without the warm-up, the processes rewrite every module (each process that finds no
    # cached rewrite when it imports one: on a fresh clone, as a rule, all of them).
    passed, rewritten = _run(_project(tmp_path / "without"))
    assert passed == tests
    assert set(rewritten) == {"conftest.py", "test_inner.py", "test_outer.py"}

    warmed = _project(tmp_path / "warmed")
    assert _run(warmed, "tests.support.rewrite_cache") == (tests, [])
    cached = sorted(
        str((pyc.parent.parent / pyc.name.split(".")[0]).relative_to(warmed)) + ".py"
        for pyc in warmed.rglob("__pycache__/*-pytest-*.pyc")
    )
    # the project's own conftest.py is rewritten as the controller loads it, as always
    assert cached == [
        "conftest.py",
        "tests/inner/conftest.py",
        "tests/inner/test_inner.py",
        "tests/test_outer.py",
    ]


@pytest.mark.slow
def test_a_module_that_does_not_parse_is_left_to_the_test_process_to_report(tmp_path):
    project = _project(tmp_path / "broken")
    (project / "tests" / "test_broken.py").write_text("def test_broken(:\n    pass\n")
    done = _pytest(project, "tests.support.rewrite_cache")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR tests/test_broken.py" in done.stdout, done.stdout
