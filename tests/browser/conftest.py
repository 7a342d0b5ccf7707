"""Browser fixtures: Debian's Chromium driven by Playwright, and gunicorn as README runs it
in production (no DEBUG, static files collected first, served by WhiteNoise)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.support.browser import CHROMIUM
from tests.support.web import WebServer
from tests.support.worker import ROOT, database_url

OUTPUT = ROOT / "var" / "test-output"  # screenshots, for a person to look at


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium; without it the tests skip, except under CI, where they fail.
    (Requested before ``server``, so that a skip starts no gunicorn.)"""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run the browser tests")
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture(scope="session")
def gunicorn(django_db_setup, tmp_path_factory) -> Iterator[WebServer]:
    """gunicorn on the test database as README runs it in production: no DEBUG, static
    files collected first."""
    directory = tmp_path_factory.mktemp("gunicorn")
    env = {"DATABASE_URL": database_url(), "DEBUG": "0", "STATIC_ROOT": str(directory / "static")}
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env={**os.environ, **env, "DJANGO_SETTINGS_MODULE": "adstudio.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    server = WebServer(env=env, log=directory / "gunicorn.log", threads=8)
    try:
        yield server.start(ready_path="/admin/login/")
    finally:
        server.stop()


@pytest.fixture
def server(gunicorn: WebServer) -> Iterator[str]:
    """The base URL; what gunicorn logged during the test is printed after it (pytest
    shows it when the test failed)."""
    start = gunicorn.log.stat().st_size
    yield gunicorn.base
    with gunicorn.log.open() as log:
        log.seek(start)
        print(f"gunicorn's log during the test:\n{log.read()}")


@pytest.fixture
def screenshot(request) -> Iterator:
    """``screenshot(page, name)`` saves the whole page under var/test-output/<test>/."""
    folder = OUTPUT / re.sub(r"[^\w.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)

    def save(page: Page, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    yield save
