"""What each of the suite's parallel processes (pytest-xdist's ``gw0``, ``gw1``, ...) owns
alone, so that two of them can run tests in the same minute: its Redis database, its
ports, and a lock for the few things that only one of them may do at a time.

PostgreSQL needs nothing here: pytest-django gives each process a test database of its
own (``test_adstudio_gw0``, ...).
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def process_number() -> int:
    """0 for ``gw0`` and for a run without pytest-xdist, 1 for ``gw1``, ..."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw"))


def redis_url_of_this_process(base: str) -> str:
    """``base`` with the database this process uses: the one ``base`` names for ``gw0``,
    the one below it for ``gw1``, and so on (Redis numbers its databases 0 to 15 unless
    configured otherwise). Each process's brokers and queues are then its own, and it
    may empty its database around a test without touching another's."""
    parts = urlsplit(base)
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise RuntimeError(f"ADSTUDIO_TEST_REDIS_URL={base!r} names no database number")
    database = int(path or 0) - process_number()
    if database < 0:
        raise RuntimeError(
            f"ADSTUDIO_TEST_REDIS_URL={base!r} leaves no Redis database for test process "
            f"gw{process_number()}: name a higher database (the suite counts down from it) "
            "or run fewer processes (-n)"
        )
    return urlunsplit(parts._replace(path=f"/{database}"))


def free_port() -> int:
    """A loopback port on which nothing listens at this moment: for a client that must
    find nobody there. A server of the test's own takes a socket from
    ``listening_socket()``, or retries on another port when this one was taken meanwhile
    (``tests.support.worker.RedisServer``, ``tests.support.postgres.PostgresServer``)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening_socket() -> socket.socket:
    """A loopback socket, bound to a port the system chose and listening, to hand to a
    server process (``pass_fds``): no other process can take the port in between."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def address_taken(log: str) -> bool:
    """Whether a server's start-up log says its port was taken (Redis, PostgreSQL)."""
    return "Address already in use" in log


@contextmanager
def one_process_at_a_time(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block: the other
    test processes wait at the same block, e.g. before installing shared packages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
