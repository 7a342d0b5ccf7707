"""A killed test process leaves no server behind: the gunicorn (its master and workers)
and the Celery worker it forked from its fork server, that server, a Celery worker it
executed and Redis die with it, though SIGKILL gave it no chance to stop them
(``testbed.lifetime``). Before, they outlived a killed pytest and went on consuming a
shared Redis database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.worker import ROOT, database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Plays a test process: starts the servers, says their pids, then waits to be killed.
CHILD = """
import json, os, sys, time
from pathlib import Path
import django
django.setup()
from testbed.forkserver import ForkServer
from testbed.worker import WorkerProcess
from tests.support.web import WebServer
from tests.support.worker import LEAN_WORKER, RedisServer

folder = Path(sys.argv[1])
redis = RedisServer(log_dir=folder)
redis.start()
web = WebServer(env={"DATABASE_URL": os.environ["DATABASE_URL"], "DEBUG": "0"},
                log=folder / "web.log", asgi=True).start(ready_path="/healthz")
worker = WorkerProcess(log_dir=folder, env={"DATABASE_URL": os.environ["DATABASE_URL"],
                       "CELERY_BROKER_URL": redis.url, "ADSTUDIO_SWEEPS": "0",
                       **LEAN_WORKER},
                       concurrency=1)
worker.start()
forked = WorkerProcess(log_dir=folder, env=worker.env, concurrency=1, name="forked", forked=True)
forked.start()
print(json.dumps({"redis": redis.process.pid, "web": web.process.pid,
                  "worker": worker.process.pid, "forked": forked.process.pid,
                  "fork_server": ForkServer.shared().process.pid}), flush=True)
time.sleep(600)
"""


def _session_members(session: int) -> set[int]:
    members = set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if os.getsid(int(entry.name)) == session:
                members.add(int(entry.name))
        except (OSError, ValueError):
            continue
    return members


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie is dead, waiting for its parent to read its status


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_the_servers_of_a_killed_test_process_die_with_it(tmp_path):
    env = {**os.environ, "DATABASE_URL": database_url()}
    env["DJANGO_SETTINGS_MODULE"] = "adstudio.settings"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = child.stdout.readline()
        assert line, f"the child started nothing: {child.wait(30)}"
        pids = json.loads(line)
        web_session = _session_members(pids["web"])
        servers = {pids["redis"], pids["worker"], pids["forked"], pids["fork_server"], *web_session}
        assert len(web_session) >= 2, "gunicorn's master and its worker"
        assert all(_alive(pid) for pid in servers)
        assert _parent(pids["forked"]) == pids["fork_server"], "forked, not executed"

        os.kill(child.pid, signal.SIGKILL)  # no clean-up of its own runs
        child.wait(10)

        deadline = time.monotonic() + 15
        while any(_alive(pid) for pid in servers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in servers if _alive(pid)] == []
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
