"""The API docs and the admin in a real browser (Debian's Chromium, headless), served by
gunicorn as in production: static files collected, then served by WhiteNoise, and the
docs asking nothing of any host beyond this machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from playwright.sync_api import Page, Route, sync_playwright

from tests.support.worker import ROOT, database_url, free_port

CHROMIUM = Path("/usr/bin/chromium")
LOOPBACK_HOSTS = {"127.0.0.1", "localhost"}
PASSWORD = "pw-browser-123"


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's Chromium; without it the tests skip, except under CI, where they fail.
    (Requested before ``server``, so that a skip starts no gunicorn.)"""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run the browser tests")
        pytest.skip(message)
    return CHROMIUM


@dataclass
class Server:
    base: str
    log: Path


@pytest.fixture(scope="module")
def gunicorn(django_db_setup, tmp_path_factory) -> Iterator[Server]:
    """gunicorn on the test database as README runs it in production: no DEBUG, static
    files collected first."""
    directory = tmp_path_factory.mktemp("gunicorn")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "ALLOWED_HOSTS": "127.0.0.1",
        "DEBUG": "0",
        "STATIC_ROOT": str(directory / "static"),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    port = free_port()
    server = Server(f"http://127.0.0.1:{port}", directory / "gunicorn.log")
    with server.log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "adstudio.wsgi",
                "--worker-class", "gthread", "--threads", "8", "--workers", "1",
                "--bind", f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status = httpx.get(f"{server.base}/admin/login/", timeout=2).status_code
            except httpx.TransportError:
                status = None
            if status == 200:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn not serving ({status}):\n{server.log.read_text()}")
            time.sleep(0.1)
        yield server
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


@pytest.fixture
def server(gunicorn: Server) -> Iterator[str]:
    """The base URL; what gunicorn logged during the test is printed after it (pytest
    shows it when the test failed)."""
    start = gunicorn.log.stat().st_size
    yield gunicorn.base
    with gunicorn.log.open() as log:
        log.seek(start)
        print(f"gunicorn's log during the test:\n{log.read()}")


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


@pytest.mark.django_db(transaction=True)
def test_the_api_docs_render_with_nothing_from_outside(chromium, server):
    with loopback_visit(chromium) as visit:
        response = visit.page.goto(f"{server}/api/docs/", wait_until="networkidle")
        assert response.status == 200
        assert visit.aborted == []
        assert visit.failures() == []

        visit.page.wait_for_selector(".opblock", timeout=20_000)
        assert visit.page.get_by_text("/api/ai/generate", exact=True).count() >= 1
        scripts = [url for _, kind, url in visit.responses if kind == "script"]
        assert any("/static/drf_spectacular_sidecar/swagger-ui-dist/" in u for u in scripts)
        # From a host that is not loopback, Swagger UI would send the schema's URL to
        # swagger.io's validator: ours never does.
        assert visit.page.evaluate("ui.getConfigs().validatorUrl") is None


@pytest.mark.django_db(transaction=True)
def test_the_admin_is_styled_under_gunicorn(chromium, server, django_user_model):
    # the gunicorn process hashes passwords with Django's default, not the suite's MD5
    hasher = PBKDF2PasswordHasher()
    django_user_model.objects.create(
        username="browser-staff",
        password=hasher.encode(PASSWORD, hasher.salt()),
        is_staff=True,
        is_superuser=True,
    )
    assert httpx.get(f"{server}/static/admin/css/base.css").status_code == 200

    with loopback_visit(chromium) as visit:
        page = visit.page
        assert page.goto(f"{server}/admin/login/?next=/admin/").status == 200
        page.fill("#id_username", "browser-staff")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url(f"{server}/admin/")

        assert page.get_by_text("Review desk").count() >= 1
        stylesheets = [url for _, kind, url in visit.responses if kind == "stylesheet"]
        assert any("/static/admin/css/base." in url for url in stylesheets), stylesheets
        assert visit.failures() == []
        header = page.eval_on_selector("#header", "e => getComputedStyle(e).backgroundColor")
        assert header not in {"rgba(0, 0, 0, 0)", "transparent"}, header
        assert visit.aborted == []
