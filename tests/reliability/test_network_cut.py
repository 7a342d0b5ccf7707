"""A host cut off from the network while the database's reply to it is in flight: the
server's keepalives never probe such a connection (its data is unacknowledged), so without
``tcp_user_timeout`` its backend, and every lock its transaction holds, outlive the host
for the kernel's retransmissions (about 15 minutes). The client here is a process in a
network namespace of its own, on a link to a private PostgreSQL, connecting with the
options ``adstudio.env`` gives every connection; the test cuts the link while the server
sends it a large reply, and times how long another connection waits for its lock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from adstudio.env import database_config
from testbed.lifetime import tethered
from tests.support.postgres import PostgresServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("ip") is None,
        reason="needs root and iproute2 (a network namespace and a link to cut)",
    ),
]

PREFIX = "adst-cut-"
LOCK = 4242
# The client: its transaction takes the lock, then asks for a reply too large for the
# sockets' buffers, which the server is still sending when the link is cut.
CLIENT = """
import json, sys
import psycopg
connection = psycopg.connect(**json.loads(sys.argv[1]))
connection.execute("SELECT pg_advisory_xact_lock(%s)", [int(sys.argv[2])])
print("locked", flush=True)
connection.execute("SELECT pg_sleep(1), repeat('x', 20000000)").fetchone()
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _remove_left_namespaces() -> None:
    """Namespaces of test processes that were killed before their clean-up."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(PREFIX) and not os.path.exists(f"/proc/{name.removeprefix(PREFIX)}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


@dataclass
class Link:
    namespace: str
    ours: str  # this side's interface
    server: str  # this side's address
    client: str  # the namespace's address

    def cut(self) -> None:
        _ip("link", "set", self.ours, "down")


@contextmanager
def link() -> Iterator[Link]:
    """A namespace linked to this one by a veth pair, on a /30 of this process's own."""
    _remove_left_namespaces()
    pid = os.getpid()
    net = f"10.{200 + pid % 50}.{(pid // 50) % 250}"
    found = Link(f"{PREFIX}{pid}", f"adcut{pid % 100000}", f"{net}.1", f"{net}.2")
    _ip("netns", "add", found.namespace)
    try:
        _ip(
            "link",
            "add",
            found.ours,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            found.namespace,
        )
        _ip("addr", "add", f"{found.server}/30", "dev", found.ours)
        _ip("link", "set", found.ours, "up")
        _ip("-n", found.namespace, "addr", "add", f"{found.client}/30", "dev", "eth0")
        _ip("-n", found.namespace, "link", "set", "eth0", "up")
        yield found
    finally:
        subprocess.run(["ip", "netns", "del", found.namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", found.ours], capture_output=True)


def _connection_options(monkeypatch, server: PostgresServer, net: Link, server_side: str):
    """What ``adstudio.env`` gives a connection to this server, with the server's side of
    ``tcp_user_timeout`` as ``server_side`` says (ms), as a URL would set it."""
    monkeypatch.setenv(
        "ADSTUDIO_TEST_CUT_URL",
        f"postgres://postgres@{net.server}:{server.port}/postgres"
        f"?options=-c%20tcp_user_timeout={server_side}",
    )
    config = database_config("ADSTUDIO_TEST_CUT_URL", default_sqlite_path=Path("unused"))
    libpq = {
        k: v
        for k, v in config["OPTIONS"].items()
        if k not in ("pool", "server_side_binding", "prepare_threshold")
    }
    assert f"tcp_user_timeout={server_side}" in libpq["options"]
    assert "tcp_keepalives_idle=30" in libpq["options"]  # the rest as every connection's
    return {
        "host": config["HOST"],
        "port": int(config["PORT"]),
        "user": config["USER"],
        "dbname": config["NAME"],
        **libpq,
    }


def _seconds_until_the_lock_is_free(server: PostgresServer, *, within: float) -> float | None:
    started = time.monotonic()
    with psycopg.connect(server.url(), autocommit=True) as other:
        while time.monotonic() - started < within:
            if other.execute("SELECT pg_try_advisory_lock(%s)", [LOCK]).fetchone()[0]:
                other.execute("SELECT pg_advisory_unlock(%s)", [LOCK])
                return time.monotonic() - started
            time.sleep(0.2)
    return None


@contextmanager
def _server_on(net: Link) -> Iterator[PostgresServer]:
    server = PostgresServer(also_listen_on=net.server)
    try:
        server.start()
        yield server
    finally:
        server.remove()


def _cut_mid_reply(monkeypatch, *, server_side: str, within: float) -> float | None:
    """Seconds until the cut-off client's lock is free, or None if it is not ``within``."""
    with link() as net, _server_on(net) as server:
        options = _connection_options(monkeypatch, server, net, server_side)
        command = ["ip", "netns", "exec", net.namespace, sys.executable, "-c", CLIENT]
        client = subprocess.Popen(
            tethered([*command, json.dumps(options), str(LOCK)]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert client.stdout.readline().strip() == "locked", client.stderr.read()
            time.sleep(0.3)  # the server sleeps, then sends
            net.cut()
            return _seconds_until_the_lock_is_free(server, within=within)
        finally:
            client.kill()
            client.wait(10)


def test_a_cut_off_clients_locks_go_with_tcp_user_timeout(monkeypatch):
    freed = _cut_mid_reply(monkeypatch, server_side="2000", within=20)
    assert freed is not None, "the cut-off client's lock was still held after 20 s"
    # the server's 1 s of sleep, then 2 s of unacknowledged data, give or take the
    # retransmission timer's steps
    assert freed < 10


def test_without_it_the_cut_off_clients_lock_stays(monkeypatch):
    """The control: the same cut with the server's ``tcp_user_timeout`` off."""
    assert _cut_mid_reply(monkeypatch, server_side="0", within=8) is None
