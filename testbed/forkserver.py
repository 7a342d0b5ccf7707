"""Processes forked from one that has already imported their libraries: a test's Celery
worker starts in under a third of the CPU of a new interpreter's
(benchmarks/worker_start.py), its gunicorn in under half, and the suite starts about
fifty and fifteen of them.

The server is ``python -m testbed.forkserver SOCKET MODULE...``: it imports the modules
(none that reads Django's settings, so that each child still configures itself from its
own environment), then listens on a Unix socket. Each connection asks for one process, as
one line of JSON (``argv``: a ``python -m`` module and its arguments, ``env``, ``cwd``,
``log``, ``fds``: the numbers under which the child gets the descriptors passed with the
line); the server forks, answers ``{"pid": N}`` and, when the child ends, its exit code
(negative: the signal that ended it, as ``subprocess`` says it), then closes.

The child is what ``python -m MODULE ARGS`` would be from there on: its own session (a
test signals its process group), its environment replaced, stdout and stderr to the log,
killed when the server dies (which dies with the test process that started it:
``testbed.lifetime``). A program whose start the environment changes below Python
(``LD_PRELOAD``: libfaketime) cannot be forked: ``ForkServer.can_start`` says so and the
caller executes it instead.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import importlib
import json
import os
import runpy
import select
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from testbed.lifetime import die_with_parent, tethered

PR_SET_NAME = 15

# What an interpreter reads from its environment as it starts, before any module of
# ours: a child whose environment changes one of them is executed anew, not forked.
EXEC_ONLY = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LANG", "OTEL_PYTHON_CONTEXT")
EXEC_ONLY_PREFIXES = ("PYTHON", "LC_")

# The libraries of a lean test worker and of gunicorn with uvicorn's workers that read no
# settings when imported (a worker's start's CPU: celery and Django's modules about half,
# the openai SDK a quarter).
MODULES = (
    "gunicorn.app.wsgiapp",
    "gunicorn.arbiter",
    "uvicorn",
    "uvicorn_worker",
    "celery.bin.celery",
    "celery.apps.worker",
    "celery.concurrency.thread",
    "kombu.transport.redis",
    "redis",
    "psycopg",
    "psycopg_pool",
    "django.db.models",
    "django.contrib.admin",
    "django.http",
    "django.urls",
    "httpx",
    "numpy",
    "openai",
    "tiktoken",
)


class ForkedProcess:
    """What a test needs of a ``subprocess.Popen`` for a process the server forked: its
    ``pid``, ``poll()``, ``wait(timeout)`` and ``returncode``."""

    def __init__(self, connection: socket.socket, args: list[str]) -> None:
        self._connection = connection
        self._received = b""
        self.args = args
        self.returncode: int | None = None
        line = self._line(timeout=60)
        if not line:
            raise RuntimeError(f"the fork server started no process for {args}: see its log")
        self.pid: int = json.loads(line)["pid"]

    def poll(self) -> int | None:
        return self._ended(timeout=0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._ended(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def _ended(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            line = self._line(timeout)
            if line is None:
                return None
            if not line:  # the server died before the child's end reached us
                raise RuntimeError(f"the fork server lost process {self.pid}")
            self.returncode = json.loads(line)["returncode"]
            self._connection.close()
        return self.returncode

    def _line(self, timeout: float | None) -> bytes | None:
        """The server's next line; None if none came within ``timeout``; b"" at its end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._received:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._connection], [], [], left)[0]:
                return None
            chunk = self._connection.recv(4096)
            if not chunk:
                return b""
            self._received += chunk
        line, self._received = self._received.split(b"\n", 1)
        return line


class ForkServer:
    """The client: ``start(argv, env=..., cwd=..., log=...)`` a process from the server.
    ``shared()``: one per test process, started at its first use."""

    _shared: ForkServer | None = None
    _lock = threading.Lock()

    def __init__(self, modules: tuple[str, ...] = MODULES) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="adstudio-forkserver-"))
        self.socket_path = self.folder / "socket"
        self.log = self.folder / "server.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                tethered(
                    [sys.executable, "-m", "testbed.forkserver", str(self.socket_path), *modules]
                ),
                cwd=Path(__file__).resolve().parent.parent,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 60
        while not self.socket_path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fork server did not start:\n{self.log.read_text()}")
            time.sleep(0.02)
        self.environ = dict(os.environ)
        atexit.register(self.stop)

    @classmethod
    def shared(cls) -> ForkServer | None:
        """This process's server, or None from a thread other than the main one: the
        server dies with the thread that starts it."""
        with cls._lock:
            if cls._shared is None or cls._shared.process.poll() is not None:
                if threading.current_thread() is not threading.main_thread():
                    return None
                cls._shared = cls()
            return cls._shared

    def can_start(self, env: dict[str, str]) -> bool:
        """Whether a child with ``env`` is the program a new interpreter would be."""
        names = {
            *EXEC_ONLY,
            *(n for n in {*env, *self.environ} if n.startswith(EXEC_ONLY_PREFIXES)),
        }
        return all(env.get(name) == self.environ.get(name) for name in names)

    def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        log: Path,
        pass_fds: tuple[int, ...] = (),
    ) -> ForkedProcess:
        """``argv``: ``["-m", MODULE, ARG...]``, as after ``python``; ``pass_fds``: this
        process's descriptors the child has under the same numbers (a listening socket)."""
        if argv[0] != "-m":
            raise ValueError(f"only `python -m MODULE` can be forked, not {argv}")
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(self.socket_path))
        request = {
            "argv": argv[1:],
            "env": env,
            "cwd": str(cwd),
            "log": str(log),
            "fds": list(pass_fds),
        }
        message = json.dumps(request).encode() + b"\n"
        socket.send_fds(connection, [message], list(pass_fds))
        return ForkedProcess(connection, [sys.executable, *argv])

    def stop(self) -> None:
        """Kill the server, and so its children, and remove its socket's folder."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def launch(
    command: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log: Path,
    forked: bool = True,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen | ForkedProcess:
    """``command`` (``[python, "-m", MODULE, ARG...]``) as a test's server: forked from this
    process's fork server where it can be (``forked``, the thread, the environment), a new
    interpreter otherwise; either way in a session of its own, its output to ``log`` (new),
    dying with the test process."""
    server = ForkServer.shared() if forked else None
    if server is not None and server.can_start(env):
        log.write_text("")
        return server.start(command[1:], env=env, cwd=cwd, log=log, pass_fds=pass_fds)
    with log.open("w") as out:
        return subprocess.Popen(
            tethered(command),
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )


# --- the server ------------------------------------------------------------------------


def _request(connection: socket.socket) -> tuple[dict, list[int]]:
    """A client's request and the descriptors it passed (received under new numbers)."""
    received, passed = b"", []
    while not received.endswith(b"\n"):
        data, descriptors, _flags, _address = socket.recv_fds(connection, 1 << 20, 16)
        if not data:
            raise ConnectionError("the client left before its request was whole")
        received += data
        passed += descriptors
    return json.loads(received), passed


def _child(request: dict, server: int, passed: list[int]) -> None:
    """Become ``python -m MODULE ARGS`` with the request's environment. Its end, normal or
    not, unwinds out of ``serve`` as a SystemExit or an exception would out of a new
    interpreter's ``-m``: the interpreter's exit (atexit, threads joined) then runs as it
    would there, and the server's loop never runs again in the child."""
    os.setsid()
    die_with_parent()
    module, *args = request["argv"]
    name_this_process(module)
    if os.getppid() != server:  # the server died before the line above
        os._exit(1)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(null)
    # Out of the way of every number wanted first, then to those numbers (inheritable, as
    # ``pass_fds`` leaves them).
    above = max([*passed, *request["fds"], 2]) + 1
    parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above) for fd in passed]
    for fd in passed:
        os.close(fd)
    for fd, number in zip(parked, request["fds"], strict=True):
        os.dup2(fd, number)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()  # TZ, as a new interpreter reads it
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    raise SystemExit(0)


def name_this_process(name: str) -> None:
    """The process's name in ``/proc/PID/comm`` (its command line stays the server's):
    how ``benchmarks/process_cpu.py`` tells a forked ``celery`` from the server."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name.encode()[:15])


def serve(socket_path: str, modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path + ".tmp")
    listener.listen(64)
    os.rename(socket_path + ".tmp", socket_path)  # the client waits for the name
    server = os.getpid()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                connection, _ = listener.accept()
                try:
                    request, passed = _request(connection)
                except (OSError, ValueError):  # a client gone, or not one of ours
                    connection.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:  # the server's sockets are not the child's
                    for other in list(selector.get_map().values()):
                        if other.data:
                            other.data[1].close()
                            os.close(other.fd)
                    selector.close()
                    listener.close()
                    connection.close()
                    _child(request, server, passed)
                for descriptor in passed:
                    os.close(descriptor)
                with contextlib.suppress(OSError):  # a client gone: its child is reaped still
                    connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                selector.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, connection))
            else:
                pid, connection = key.data
                selector.unregister(key.fileobj)
                os.close(key.fileobj)
                _, status = os.waitpid(pid, 0)
                try:
                    code = os.waitstatus_to_exitcode(status)
                    connection.sendall(json.dumps({"returncode": code}).encode() + b"\n")
                except OSError:
                    pass  # the client went first
                connection.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
