"""Headless Chromium for tests: pages that may reach loopback only, staff who can log in to
a gunicorn started by the test.

Playwright's sync API runs an event loop in the test's thread while a page is open, and
Django refuses database queries in a thread with a running loop: a test does its queries
before opening the page or after closing it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from playwright.sync_api import Page, Route, sync_playwright

# Chromium's headless build (Debian's chromium-headless-shell, from the chromium source
# package; the build Playwright itself runs headless): the same engine without the desktop
# browser around it, half the CPU a launch and a page cost (benchmarks/browser_launch.py).
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
LOOPBACK_HOSTS = {"127.0.0.1", "localhost"}
PASSWORD = "pw-browser-123"


@dataclass
class Visit:
    """A page, the URLs beyond loopback it asked for (aborted), and every response it got
    as ``(status, resource type, URL)``."""

    page: Page
    aborted: list[str] = field(default_factory=list)
    responses: list[tuple[int, str, str]] = field(default_factory=list)

    def failures(self) -> list[tuple[int, str, str]]:
        return [response for response in self.responses if response[0] >= 400]


@contextmanager
def loopback_visit(chromium: Path) -> Iterator[Visit]:
    """A page of a fresh headless Chromium that may reach loopback only.

    Playwright's sync API runs an event loop in this thread while it is open, and Django
    refuses database queries in a thread with a running loop: a test does its queries
    before opening the page (and the test database is flushed after it closed)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), headless=True)
        try:
            context = browser.new_context()
            visit = Visit(context.new_page())

            def loopback_only(route: Route) -> None:
                if urlsplit(route.request.url).hostname in LOOPBACK_HOSTS:
                    route.continue_()
                else:
                    visit.aborted.append(route.request.url)
                    route.abort()

            context.route("**/*", loopback_only)
            visit.page.on(
                "response",
                lambda r: visit.responses.append((r.status, r.request.resource_type, r.url)),
            )
            yield visit
        finally:
            browser.close()


def make_staff(username: str, *, superuser: bool = False, groups: tuple[str, ...] = ()):
    """A staff user who can log in to gunicorn with ``PASSWORD`` (gunicorn hashes with
    Django's default hasher, not the suite's MD5)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    hasher = PBKDF2PasswordHasher()
    user = get_user_model().objects.create(
        username=username,
        password=hasher.encode(PASSWORD, hasher.salt()),
        is_staff=True,
        is_superuser=superuser,
    )
    user.groups.add(*Group.objects.filter(name__in=groups))
    return user


def log_in(page: Page, base: str, username: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
