"""``.ci/run`` checks the PostgreSQL and Redis the test command will use (the Makefile's
defaults, or DATABASE_URL / ADSTUDIO_TEST_REDIS_URL), not fixed ports: pointed at a
server that is not there, it names that service and address and stops, instead of
passing on this machine's own servers and leaving the suite to fail on connection
errors. Only its probe runs here (everything before it installs anything)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.parallel import free_port
from tests.support.worker import REDIS_URL, database_url

pytestmark = pytest.mark.slow  # runs .ci/run's probe in bash

CI_RUN = Path(__file__).resolve().parents[2] / ".ci" / "run"


def probe(**env: str) -> subprocess.CompletedProcess:
    """The part of .ci/run before its installs, run as .ci/run itself would be."""
    lines = CI_RUN.read_text().splitlines(keepends=True)
    end = next(n for n, line in enumerate(lines) if line.startswith("# The browser tests"))
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TEST_DATABASE_URL"}}
    return subprocess.run(
        ["bash", "-c", "".join(lines[:end]), str(CI_RUN)],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_services_the_suite_uses_pass():
    result = probe(DATABASE_URL=database_url(), ADSTUDIO_TEST_REDIS_URL=REDIS_URL)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_database_url_where_nothing_listens_is_named_and_stops_the_run():
    port = free_port()
    result = probe(
        DATABASE_URL=f"postgres://ci:s3cret@127.0.0.1:{port}/adstudio?sslmode=disable",
        ADSTUDIO_TEST_REDIS_URL=REDIS_URL,
    )
    assert result.returncode == 1
    assert f"PostgreSQL (DATABASE_URL) unreachable at 127.0.0.1:{port}" in result.stderr
    assert "starting it" not in result.stdout  # not this machine's default: not ours to start
    assert "s3cret" not in result.stdout + result.stderr


def test_a_redis_url_where_nothing_listens_is_named_and_stops_the_run():
    port = free_port()
    result = probe(DATABASE_URL=database_url(), ADSTUDIO_TEST_REDIS_URL=f"redis://[::1]:{port}/3")
    assert result.returncode == 1
    assert f"Redis (ADSTUDIO_TEST_REDIS_URL) unreachable at [::1]:{port}" in result.stderr
    assert "starting it" not in result.stdout
