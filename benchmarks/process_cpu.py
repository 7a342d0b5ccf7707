"""What a command's processes spent, by kind of process: a thread polls ``/proc`` while
the command runs and keeps each descendant's CPU (user and system, its own, not its
children's) as last seen. A process that lives less than one poll (0.3 s) is missed, and
one that exits between polls loses what it spent since the last; the machine's other
processes are left out.

Used by ``benchmarks/suite.py make`` to say which of the suite's processes the CPU went
to: its test processes, the workers, web servers and databases they start, Chromium, node.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
FORKED = {"celery": "Celery worker", "gunicorn": "gunicorn"}  # a forked process's name -> its kind


def kind_of(command: list[str]) -> str:
    """The kind of process a command line is, as the suite's account names it."""
    if not command:
        return "other"
    program = Path(command[0].split(" ")[0]).name  # a server may rewrite its title in one
    joined = " ".join(command)
    if command[0].startswith("postgres:") or program == "postgres":
        return "PostgreSQL"
    if "celery" in command[1:3] or "-m celery" in joined:
        return "Celery worker" if "worker" in command else "Celery"
    if program == "gunicorn" or "gunicorn" in command[1:3]:
        return "gunicorn"
    if "chrom" in program or (program == "exe" and "--type=" in joined):
        return "Chromium"
    if program in ("node", "redis-server", "haproxy"):
        return program
    if "manage.py" in command:
        following = command[command.index("manage.py") + 1 :]
        return f"manage.py {following[0]}" if following else "manage.py"
    if "pytest" in joined or "exec(eval(" in joined:  # pytest-xdist's test processes
        return "test processes"
    if "rehearse.py" in joined or "director.py" in joined:
        return "rehearsal"
    for part in command[1:3]:
        if part.startswith("testbed."):
            return part
    if program.startswith("python"):
        return "other Python"
    return program


def kind_of_process(pid: int, command: list[str]) -> str:
    """``kind_of`` the command line, but for a process forked by the tests' fork server
    (``testbed.forkserver``), which keeps the server's command line and is named by the
    program it runs (``/proc/PID/comm``)."""
    kind = kind_of(command)
    if kind != "testbed.forkserver":
        return kind
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return kind
    if name.startswith("python"):
        return "fork server"
    return f"{FORKED.get(name, name)} (forked)"


def _read(pid: str) -> tuple[int, float, tuple[str, str]] | None:
    """``pid``'s parent, CPU seconds and identity (pid, start time), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    return int(fields[1]), cpu, (pid, fields[19])


def command_of(pid: str) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


class ProcessCPU:
    """``with ProcessCPU(root_pid) as polled:`` ... ``polled.by_kind()`` after the block."""

    def __init__(self, root: int, every: float = 0.3) -> None:
        self.root = root
        self.every = every
        self.seen: dict[tuple[str, str], list] = {}  # identity -> [kind, cpu]
        self._ours: dict[int, str | None] = {root: None}  # pid -> start time (a pid recurs)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="process-cpu", daemon=True)

    def __enter__(self) -> ProcessCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while True:
            self.scan()
            if self._stop.wait(self.every):
                self.scan()
                return

    def scan(self) -> None:
        """One look at every process: the root's descendants' CPU and kind."""
        found = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                read = _read(pid)
                if read is not None:
                    found[int(pid)] = read
        for pid in [pid for pid, start in self._ours.items() if start is not None]:
            if pid not in found or found[pid][2][1] != self._ours[pid]:
                del self._ours[pid]  # gone, or its pid taken by another process
        grew = True
        while grew:  # a child listed before its parent joins on the next pass
            grew = False
            for pid, (parent, _cpu, identity) in found.items():
                if pid not in self._ours and parent in self._ours:
                    self._ours[pid] = identity[1]
                    grew = True
        for pid in self._ours.keys() & found.keys():
            _parent, cpu, identity = found[pid]
            # Read each time: a process first seen between its fork and its exec (setpriv's,
            # say) is named by the program it became; an exited one not yet reaped has no
            # command line left and keeps its name.
            command = command_of(str(pid))
            if identity not in self.seen or command:
                self.seen[identity] = [kind_of_process(pid, command), cpu]
            else:
                self.seen[identity][1] = cpu

    def by_kind(self) -> dict[str, dict[str, float]]:
        """Per kind: how many processes and their CPU seconds, the costliest first."""
        kinds: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        for identity, (kind, cpu) in self.seen.items():
            if int(identity[0]) != self.root:
                kinds[kind][0] += 1
                kinds[kind][1] += cpu
        return {
            kind: {"processes": int(count), "cpu_s": round(cpu, 1)}
            for kind, (count, cpu) in sorted(kinds.items(), key=lambda kv: -kv[1][1])
        }
