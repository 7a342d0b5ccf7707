"""The servers a test starts die with the process that started them, even when that
process is killed (SIGKILL, a CI timeout) and no clean-up of its own runs: Linux's
parent-death signal, set by util-linux's ``setpriv`` before the server's program starts
(the process keeps its pid, so a test still signals the server itself), and by
``die_with_parent`` in each process a server forks (gunicorn's workers)."""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def tethered(command: list[str]) -> list[str]:
    """``command``, killed when the thread that starts it ends (its test process)."""
    return ["setpriv", "--pdeathsig", "KILL", *command]


def die_with_parent() -> None:
    """This process gets SIGKILL when its parent ends (for a server's forked children)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
