"""Browser fixtures: Debian's Chromium driven by Playwright, and the suite's shared gunicorn,
run as README runs it in production (no DEBUG, static files collected first, served by
WhiteNoise)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.support.browser import CHROMIUM
from tests.support.fixtures import Stack
from tests.support.worker import ROOT

OUTPUT = ROOT / "var" / "test-output"  # screenshots, for a person to look at


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's headless Chromium; without it the tests skip, except under CI, where they fail.
    (Requested before ``server``, so that a skip starts no gunicorn.)"""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium-headless-shell; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run the browser tests")
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture
def server(shared_stack: Stack) -> Iterator[str]:
    """The shared gunicorn's base URL (as README runs it in production: no DEBUG, static
    files collected first); what it logged during the test is printed after it (pytest
    shows it when the test failed)."""
    start = shared_stack.web.log.stat().st_size
    yield shared_stack.base
    with shared_stack.web.log.open() as log:
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
