"""The rehearsal's hosts: one network namespace each, with its own address and its own
folder for a disk, joined by a bridge in a switch namespace of its own (no address or
link is added outside the namespaces), and the processes each host runs, started as
docs/DEPLOYMENT.md deploys them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.lifetime import tethered

NET = "10.77.0"
PREFIX = "adst-"
SWITCH = f"{PREFIX}sw"
HOSTS = {"lb": 5, "db": 10, "web1": 21, "web2": 22, "worker1": 31, "worker2": 32, "client": 99}


def address(host: str) -> str:
    return f"{NET}.{HOSTS[host]}"


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=check, capture_output=True, text=True)


def inside(host: str, *command: str) -> list[str]:
    return ["ip", "netns", "exec", f"{PREFIX}{host}", *command]


class Network:
    """``up()`` the namespaces, the bridge and the links; ``cut`` and ``heal`` a host's
    link (a network partition); ``down()`` removes it all, the hosts' processes first."""

    def up(self) -> None:
        self.down()  # what an interrupted rehearsal left
        run("ip", "netns", "add", SWITCH)
        run("ip", "-n", SWITCH, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", SWITCH, "link", "set", "br0", "up")
        for host in HOSTS:
            namespace = f"{PREFIX}{host}"
            run("ip", "netns", "add", namespace)
            run(
                "ip",
                "-n",
                SWITCH,
                "link",
                "add",
                f"v{host}",
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                namespace,
            )
            run("ip", "-n", SWITCH, "link", "set", f"v{host}", "master", "br0", "up")
            run("ip", "-n", namespace, "addr", "add", f"{address(host)}/24", "dev", "eth0")
            run("ip", "-n", namespace, "link", "set", "eth0", "up")
            run("ip", "-n", namespace, "link", "set", "lo", "up")

    def cut(self, host: str) -> None:
        run("ip", "-n", SWITCH, "link", "set", f"v{host}", "down")

    def heal(self, host: str) -> None:
        run("ip", "-n", SWITCH, "link", "set", f"v{host}", "up")

    def down(self) -> None:
        for host in HOSTS:
            kill_host(host)
        for namespace in [f"{PREFIX}{h}" for h in HOSTS] + [SWITCH]:
            run("ip", "netns", "del", namespace, check=False)


def kill_host(host: str) -> None:
    """SIGKILL every process of the host, as its power going off would."""
    found = run("ip", "netns", "pids", f"{PREFIX}{host}", check=False).stdout.split()
    for pid in found:
        if pid == str(os.getpid()):  # the rehearsal itself, in the client host
            continue
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def enter(host: str) -> None:
    """This process's network from now on: the host's (before it starts any thread)."""
    with open(f"/run/netns/{PREFIX}{host}") as namespace:
        os.setns(namespace.fileno(), os.CLONE_NEWNET)


@dataclass
class Process:
    """A program a host runs, its output in a log file."""

    host: str
    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    cwd: Path
    user: str = ""
    process: subprocess.Popen | None = field(default=None, init=False)

    def start(self) -> Process:
        """Started in its host; it dies with the thread that starts it, as the suite's
        servers do (``testbed.lifetime``): a rehearsal killed (a CI timeout, Ctrl-C) leaves
        no host's process behind. Under ``runuser``, which forks, the program is tethered
        to it in turn."""
        command = tethered(self.command)
        if self.user:
            command = tethered(["runuser", "-u", self.user, "--", *command])
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                inside(self.host, *command),
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, number)

    def stop(self, timeout: float = 30) -> None:
        self.signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.process.wait(timeout=10)

    def log_has(self, text: str) -> bool:
        return self.log.exists() and text in self.log.read_text(errors="replace")


def wait_until(predicate, *, timeout: float, every: float = 0.2, what: str = "it") -> float:
    """Seconds until ``predicate()`` held; ``TimeoutError`` naming ``what`` past ``timeout``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if predicate():
                return time.monotonic() - started
        except Exception:  # a server not answering yet
            pass
        time.sleep(every)
    raise TimeoutError(f"{what} within {timeout:g} s")
