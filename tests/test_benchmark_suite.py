"""``benchmarks/suite.py``'s account of where a run's time went, from the per-test records
its pytest plugin writes in each test process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks.process_cpu import ProcessCPU, command_of, kind_of, kind_of_process
from benchmarks.suite import where_the_time_went
from testbed.forkserver import ForkServer
from tests.support.worker import ROOT


def record(test: str, start: float, end: float, cpu: float, children: float = 0.0) -> dict:
    return {"test": test, "start": start, "end": end, "cpu_s": cpu, "children_cpu_s": children}


def test_spans_cpu_and_the_costliest_files():
    tests = {
        "gw1": [
            record("tests/b.py::test_one", 100.0, 101.5, 1.0),
            record("tests/b.py::test_two", 101.5, 110.0, 0.5, children=6.0),
        ],
        "gw0": [
            record("tests/a.py::test_one", 100.2, 100.4, 0.2),
            record("tests/c.py::test_x[1]", 100.4, 104.0, 3.0),
        ],
    }

    found = where_the_time_went(tests, top=2)

    assert found["spans"] == {
        "gw0": {"tests": 2, "from_s": 0.2, "to_s": 4.0, "busy_s": 3.8},
        "gw1": {"tests": 2, "from_s": 0.0, "to_s": 10.0, "busy_s": 10.0},
    }
    assert (found["cpu_s"], found["children_cpu_s"]) == (4.7, 6.0)
    assert found["files"] == [
        {"file": "tests/b.py", "cpu_s": 7.5},
        {"file": "tests/c.py", "cpu_s": 3.0},
    ]
    # the test processes' own: b's server is left out, and c costs more than b
    assert found["files_own"] == [
        {"file": "tests/c.py", "cpu_s": 3.0},
        {"file": "tests/b.py", "cpu_s": 1.5},
    ]


def test_no_records_is_nothing_to_say():
    assert where_the_time_went({}) == {}
    assert where_the_time_went({"gw0": []}) == {}


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (["postgres: postgres test_adstudio_gw0 127.0.0.1(5000) idle"], "PostgreSQL"),
        (["/usr/lib/postgresql/15/bin/postgres", "-D", "/tmp/data"], "PostgreSQL"),
        ([".venv/bin/python", "-m", "celery", "-A", "adstudio", "worker", "-P", "threads"],
         "Celery worker"),
        ([".venv/bin/python", "-m", "gunicorn", "adstudio.asgi:application"], "gunicorn"),
        (["/usr/lib/chromium/chromium", "--headless"], "Chromium"),
        (["/proc/self/exe", "--type=utility"], "Chromium"),
        (["/usr/bin/node", "node_modules/.bin/tsc", "-p", "tsconfig.json"], "node"),
        ([".venv/bin/python", "manage.py", "collectstatic"], "manage.py collectstatic"),
        ([".venv/bin/python", "-c", "import sys;exec(eval(sys.stdin.readline()))"],
         "test processes"),
        ([".venv/bin/python", "-m", "testbed.fake_s3", "--port", "9000"], "testbed.fake_s3"),
        ([".venv/bin/python", "deploy/rehearsal/rehearse.py", "--quick"], "rehearsal"),
        (["redis-server 127.0.0.1:6390"], "redis-server"),  # its title, rewritten
        ([], "other"),
    ],
)  # fmt: skip
def test_each_process_is_named_by_its_kind(command, kind):
    assert kind_of(command) == kind


@pytest.mark.slow
def test_the_cpu_of_a_commands_processes_is_counted_by_kind():
    """A command's child spending 1 s of CPU is counted, nearly all of it (a poll's worth
    may be lost as it exits); the machine's other processes (the shared PostgreSQL, this
    test process's own servers, busy meanwhile) are not."""
    spin = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 1: pass"
    command = subprocess.Popen(
        ["bash", "-c", f'sleep 0.2; {sys.executable} -c "$SPIN"; true'],
        env={**os.environ, "SPIN": spin},
    )
    with ProcessCPU(command.pid, every=0.05) as polled:
        assert command.wait(timeout=30) == 0

    counted = polled.by_kind()
    assert set(counted) <= {"other Python", "sleep"}, counted
    assert counted["other Python"]["processes"] == 1
    assert 0.8 <= counted["other Python"]["cpu_s"] <= 1.2, counted


@pytest.mark.slow
def test_a_process_forked_by_the_fork_server_is_named_by_its_program(tmp_path):
    """Its command line stays the server's; its name (``/proc/PID/comm``) says what it
    runs."""
    server = ForkServer(modules=("json",))
    try:
        assert (
            kind_of_process(server.process.pid, command_of(str(server.process.pid)))
            == "fork server"
        )
        with ProcessCPU(server.process.pid, every=0.05) as polled:
            child = server.start(
                ["-m", "celery", "--version"], env=dict(os.environ), cwd=ROOT, log=tmp_path / "log"
            )
            assert child.wait(timeout=60) == 0
        assert (tmp_path / "log").read_text().strip()  # celery's version
        assert polled.by_kind()["Celery worker (forked)"]["processes"] == 1, polled.by_kind()
    finally:
        server.stop()
