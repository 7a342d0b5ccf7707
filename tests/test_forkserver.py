"""The fork server (``testbed.forkserver``): a forked child is the program a new
interpreter would be (its arguments, folder, environment, log, session and exit code),
and a child whose environment a new interpreter would read differently is not forked."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess

import pytest

from testbed.forkserver import ForkServer
from tests.support.worker import ROOT

pytestmark = pytest.mark.slow

PROGRAM = ["-m", "tests.support.forked_program"]


@pytest.fixture(scope="module")
def server():
    server = ForkServer(modules=("json",))
    yield server
    server.stop()


def test_a_child_runs_as_its_own_program_and_says_how_it_ended(server, tmp_path):
    log = tmp_path / "child.log"
    env = {**os.environ, "FORKED_GREETING": "hello"}
    child = server.start([*PROGRAM, "3", "more"], env=env, cwd=tmp_path, log=log)

    assert child.wait(timeout=30) == 3
    said = json.loads(log.read_text())
    assert said == {
        "argv": ["3", "more"],
        "cwd": str(tmp_path),
        "greeting": "hello",
        "session": child.pid,  # a session of its own: its group is signalled by its pid
        "pid": child.pid,
        "main": "__main__",
        "port": None,
    }
    assert child.pid != server.process.pid


def test_a_signalled_child_ends_with_the_signal_and_waits_time_out(server, tmp_path):
    log = tmp_path / "child.log"
    child = server.start([*PROGRAM, "sleep"], env=dict(os.environ), cwd=ROOT, log=log)

    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.2)
    assert child.poll() is None
    os.killpg(child.pid, signal.SIGTERM)
    assert child.wait(timeout=30) == -signal.SIGTERM
    assert child.poll() == -signal.SIGTERM
    assert json.loads(log.read_text())["argv"] == ["sleep"]


def test_what_a_new_interpreter_reads_at_its_start_is_not_forked(server):
    same = dict(os.environ)
    assert server.can_start(same)
    for name, value in (
        ("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"),
        ("PYTHONHASHSEED", "7"),
        ("LC_ALL", "C"),
    ):
        changed = value if same.get(name) != value else value + "0"  # another than ours
        assert not server.can_start({**same, name: changed}), name
    assert server.can_start({**same, "ADSTUDIO_SWEEPS": "0"})


def test_only_a_module_can_be_forked(server, tmp_path):
    with pytest.raises(ValueError, match="python -m MODULE"):
        server.start(["-c", "print(1)"], env=dict(os.environ), cwd=ROOT, log=tmp_path / "x")


def test_a_passed_descriptor_is_the_childs_under_the_same_number(server, tmp_path):
    """As ``subprocess``'s ``pass_fds``: gunicorn is given its listening socket so."""
    listening = socket.create_server(("127.0.0.1", 0))
    log = tmp_path / "child.log"
    try:
        number = listening.fileno()
        child = server.start(
            [*PROGRAM, "socket", str(number)],
            env=dict(os.environ),
            cwd=ROOT,
            log=log,
            pass_fds=(number,),
        )
        assert child.wait(timeout=30) == 0, log.read_text()
        assert json.loads(log.read_text())["port"] == listening.getsockname()[1]
    finally:
        listening.close()


def test_a_client_gone_before_its_request_was_whole_leaves_the_server_serving(server, tmp_path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
        gone.connect(str(server.socket_path))
        gone.sendall(b'{"argv": ["-m"')  # and no more
    child = server.start([*PROGRAM, "0"], env=dict(os.environ), cwd=ROOT, log=tmp_path / "log")
    assert child.wait(timeout=30) == 0
    assert server.process.poll() is None
