"""The order the suite hands its work out in: the longest first, as ``tests/conftest.py``
sorts it after the other plugins' hooks (pytest-django sorts by database use), and
pytest-xdist keeping it (by default it hands its work units out largest first). Left at
the end, the rehearsal ran alone for a minute after the rest of the suite had finished."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST = "test_the_rehearsal_of_several_hosts_passes_every_check"  # minutes, no database
# Of the private-PostgreSQL group (the ``@group`` suffix is pytest-xdist's, not collected).
GROUPED = "test_renders_in_flight_survive_postgres_stopped"
FILES = (
    "tests/voices/test_languages.py",  # quick, no database
    "tests/renders/test_faults.py",  # tests that start processes, one of a group
    "tests/reliability/test_resume_limit.py",  # a test that starts processes
    "tests/test_rehearsal.py",  # the rehearsal, and a test that starts processes
)
SLOW_FILES = ("test_faults.py", "test_resume_limit.py", "test_rehearsal.py")
# A quick test (it starts no process) in a file of slow ones: handed out with the quick.
QUICK_IN_SLOW_FILE = "test_the_rehearsals_client_follows_a_run_with_long_polls_that_wait"


def _kind(test: str) -> str:
    if test.endswith(FIRST):
        return "first"
    if test.endswith(GROUPED):
        return "group"
    if test.endswith(QUICK_IN_SLOW_FILE):
        return "quick"
    if test.split("::")[0].endswith(SLOW_FILES):
        return "slow"
    return "quick"


@pytest.mark.slow
def test_the_longest_work_is_collected_first():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *FILES],
        cwd=ROOT,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    order = [line for line in done.stdout.splitlines() if "::" in line]
    kinds = [_kind(test) for test in order]

    assert kinds == sorted(kinds, key=["first", "group", "slow", "quick"].index), order
    assert set(kinds) == {"first", "group", "slow", "quick"}, order


def test_pytest_xdist_hands_work_out_in_the_collections_order():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    assert "--no-loadscope-reorder" in options["ini_options"]["addopts"].split()
