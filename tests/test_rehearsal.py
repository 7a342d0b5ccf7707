"""The rehearsal of several hosts (deploy/rehearsal/), run as CI runs the suite: on a
machine that allows it (root, network namespaces, haproxy, faketime), every check must
pass; elsewhere the test says why it did not run."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.lifetime import tethered

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ("story", "cancel", "dead-worker", "partition", "clock", "reload", "redis", "web-lost")


@pytest.mark.slow
@pytest.mark.first  # minutes, beside the rest of the suite
def test_the_rehearsal_of_several_hosts_passes_every_check():
    done = subprocess.run(
        # Quick: the recovery settings shortened (the figures of record are the full
        # rehearsal's). The time bars tripled: the suite's other tests share the
        # machine's two cores (a rolling reload's p99 reached 4.9 s beside them). What is
        # counted (failed requests, events lost or repeated) is held exactly.
        tethered(
            [sys.executable, str(ROOT / "deploy/rehearsal/rehearse.py"), "--quick", "--slack", "3"]
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode == 2:
        pytest.skip(done.stdout.strip() or done.stderr.strip())
    lines = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    print(done.stdout)
    assert [line.split(":")[0] for line in lines] == [f"PASS {check}" for check in CHECKS], (
        done.stdout + done.stderr[-3000:]
    )
    assert done.returncode == 0


# deploy/rehearsal/hosts.py, which the rehearsal imports as ``hosts`` (its own folder on
# its path), loaded without adding that folder to this process's.
_spec = importlib.util.spec_from_file_location(
    "rehearsal_hosts", ROOT / "deploy/rehearsal/hosts.py"
)
hosts = sys.modules["rehearsal_hosts"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hosts)


def _programs(host: str) -> list[str]:
    """The names of the programs running in ``host``'s network namespace, sorted."""
    names = []
    for pid in hosts.run(
        "ip", "netns", "pids", f"{hosts.PREFIX}{host}", check=False
    ).stdout.split():
        with contextlib.suppress(FileNotFoundError):
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return sorted(names)


# A rehearsal (this process's child) that starts a host's programs, as its own and under
# runuser, prints their process ids and waits to be killed.
_HOST_PROGRAMS = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
sys.path.insert(0, {root!r} + "/deploy/rehearsal")
from hosts import Process
log, env = Path({log!r}), {{"PATH": {path!r}}}
own = Process({host!r}, "own", ["sleep", "300"], env, log, Path("/")).start()
as_user = Process({host!r}, "nobody", ["sleep", "300"], env, log, Path("/"), user="nobody").start()
print(own.process.pid, as_user.process.pid, flush=True)
time.sleep(300)
"""


@pytest.mark.slow
def test_a_killed_rehearsal_leaves_no_hosts_program_running(tmp_path):
    """Its hosts' programs (started in their own sessions, in network namespaces) die with
    it: a rehearsal killed by a CI timeout or by hand left a database, workers and web
    servers running in its namespaces."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("setpriv"):
        pytest.skip("needs root, iproute2 and util-linux's setpriv (network namespaces)")
    host = f"tether{os.getpid()}"
    hosts.run("ip", "netns", "add", f"{hosts.PREFIX}{host}")
    code = _HOST_PROGRAMS.format(
        root=str(ROOT), host=host, log=str(tmp_path / "host.log"), path=os.environ["PATH"]
    )
    rehearsal = subprocess.Popen(
        tethered([sys.executable, "-c", code]), stdout=subprocess.PIPE, text=True
    )
    try:
        started = rehearsal.stdout.readline().split()
        assert len(started) == 2, (tmp_path / "host.log").read_text()
        # Running (setpriv has armed the signal once it has started the program): the
        # program, and runuser with the program it started.
        deadline = time.monotonic() + 10
        while _programs(host) != ["runuser", "sleep", "sleep"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _programs(host) == ["runuser", "sleep", "sleep"]

        rehearsal.kill()
        rehearsal.wait(timeout=10)

        deadline = time.monotonic() + 10
        while _programs(host) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _programs(host) == [], "still running in the host"
    finally:
        rehearsal.kill()
        rehearsal.wait(timeout=10)
        for pid in hosts.run(
            "ip", "netns", "pids", f"{hosts.PREFIX}{host}", check=False
        ).stdout.split():
            os.kill(int(pid), signal.SIGKILL)
        hosts.run("ip", "netns", "del", f"{hosts.PREFIX}{host}", check=False)
