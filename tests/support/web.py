"""gunicorn as README runs it in production (with uvicorn's ASGI workers, ``asgi=True``,
or its threaded WSGI workers), started by a test on a free loopback port: forked from the
test process's fork server (``testbed.forkserver``) where the environment allows."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from testbed.forkserver import ForkedProcess, launch
from tests.support.parallel import listening_socket
from tests.support.worker import ROOT


class WebServer:
    """``start()`` gunicorn with ``env`` on top of this process's environment: with
    uvicorn's ASGI workers as README runs it, or (``asgi=False``) its threaded WSGI
    workers; ``base`` is its URL, ``log`` its output."""

    def __init__(
        self, *, env: dict[str, str], log: Path, threads: int = 16, asgi: bool = True
    ) -> None:
        self.socket = listening_socket()  # gunicorn takes it over: the port stays ours
        self.port = self.socket.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.log = log
        self.threads = threads
        self.asgi = asgi
        self.process: subprocess.Popen | ForkedProcess | None = None

    def start(self, *, ready_path: str = "/api/", timeout: float = 60.0) -> WebServer:
        env = {**os.environ, "ALLOWED_HOSTS": "127.0.0.1", **self.env}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        if self.asgi:
            command = [
                sys.executable,
                "-m",
                "gunicorn",
                "adstudio.asgi:application",
                "--worker-class",
                "uvicorn_worker.UvicornWorker",
                "--workers",
                "1",
                "--bind",
                f"fd://{self.socket.fileno()}",
            ]
        else:
            command = [
                sys.executable,
                "-m",
                "gunicorn",
                "adstudio.wsgi",
                "--worker-class",
                "gthread",
                "--threads",
                str(self.threads),
                "--workers",
                "1",
                "--bind",
                f"fd://{self.socket.fileno()}",
            ]
        command += ["--config", "python:testbed.gunicorn_tethered"]
        self.process = launch(
            command, env=env, cwd=ROOT, log=self.log, pass_fds=(self.socket.fileno(),)
        )
        self.socket.close()  # gunicorn's now: the port refuses connections once it exits
        try:
            # The socket listens already: the request waits in its queue until gunicorn
            # has booted and answers it.
            httpx.get(f"{self.base}{ready_path}", timeout=timeout)
            return self
        except httpx.TransportError:
            pass
        if self.process.poll() is not None:
            raise RuntimeError(f"gunicorn exited early:\n{self.log.read_text()}")
        raise RuntimeError(f"gunicorn not answering after {timeout} s:\n{self.log.read_text()}")

    def thread_count(self) -> int:
        """The threads of the server's processes (its master and workers), now."""
        total = 0
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
                if os.getsid(int(status.parent.name)) != self.process.pid:
                    continue
            except (OSError, ValueError):
                continue  # the process ended meanwhile
            total += int(text.split("\nThreads:", 1)[1].split()[0])
        return total

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


_CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def admin_login(client: httpx.Client, base: str, username: str, password: str) -> httpx.Response:
    """The admin's login form, as a browser posts it: its page for the CSRF cookie and
    token, then the form. The answer is not followed: 302 to ``/admin/`` is a login, 200
    the form again, 429 a lockout."""
    page = client.get(f"{base}/admin/login/")
    token = _CSRF_FIELD.search(page.text)
    if token is None:
        raise AssertionError(f"no login form at {base}/admin/login/ ({page.status_code})")
    return client.post(
        f"{base}/admin/login/?next=/admin/",
        data={
            "csrfmiddlewaretoken": token.group(1),
            "username": username,
            "password": password,
            "next": "/admin/",
        },
        headers={"Referer": f"{base}/admin/login/"},
    )


def client_from(address: str, **kwargs) -> httpx.Client:
    """An HTTP client whose connections leave from ``address`` (any of 127.0.0.0/8)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), **kwargs)
