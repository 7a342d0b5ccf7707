"""Fixtures of the web-client tests: node with the locked packages, and Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.browser.conftest import chromium  # noqa: F401 (a fixture of these tests too)
from tests.support.parallel import one_process_at_a_time
from tests.support.worker import ROOT

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def node() -> str:
    """node, with the locked packages installed; without node the tests skip, except under
    CI, where they fail."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        if os.environ.get("CI"):
            pytest.fail("node and npm are required under CI")
        pytest.skip("node and npm are not installed")
    installed = HERE / "node_modules" / ".package-lock.json"
    lock = HERE / "package-lock.json"
    # One test process installs; the others wait for it, then find the packages current.
    with one_process_at_a_time(ROOT / "var" / "npm-ci.lock"):
        if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
            result = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert result.returncode == 0, result.stdout + result.stderr
    return node
