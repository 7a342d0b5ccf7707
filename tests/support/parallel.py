"""What each of the suite's parallel processes (pytest-xdist's ``gw0``, ``gw1``, ...) owns
alone, so that two of them can run tests in the same minute: its Redis database, its
ports, and a lock for the few things that only one of them may do at a time.

PostgreSQL needs nothing here: pytest-django gives each process a test database of its
own (``test_adstudio_gw0``, ...).
"""

from __future__ import annotations

import fcntl
import itertools
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


PORTS_BELOW_EPHEMERAL = 8000  # shared out among the test processes


def free_port() -> int:
    """A loopback port on which nothing listens, for a server of the test's own or for a
    client that must find nobody there.

    It comes from below the range the system hands out to outgoing connections, so that
    no connection of any process takes it while its server is stopped and started again
    (a crash test restarts PostgreSQL on the same port), and from a block of ports of this
    test process's own, so that no other test process is given it. Within the block the
    ports are handed out in turn, each once before any comes round again."""
    low, _high = _ephemeral_ports()
    start = max(1024, low - PORTS_BELOW_EPHEMERAL)
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    block = (low - start) // processes
    first = start + process_number() * block
    for _ in range(block):
        port = first + next(_turn) % block
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # another program's
            return port
    raise RuntimeError(f"ports {first}-{first + block - 1} are all taken")


_turn = itertools.count()


def _ephemeral_ports() -> tuple[int, int]:
    """The range of local ports the system gives outgoing connections."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


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
