"""A command in a pseudo-terminal of its own, as a person runs it at a terminal, driven with
pexpect's ``expect`` and ``send`` from the terminal's other side.

The command starts as a shell at a terminal starts it: every signal handled the default
way (coreutils' ``env --default-signal``), in a session of its own whose controlling
terminal is this one (util-linux's ``setsid --ctty``), so that Ctrl-C reaches it as
SIGINT. A test run started in the background by a shell without job control ignores
SIGINT, and so would the command, which would then never see its Ctrl-C.

``subprocess`` forks and executes in C: ``pexpect.spawn`` would fork the test process,
whose other threads (its database pool, the fake servers') may hold a lock at that
moment, and run Python in the child before it executes the command.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import termios
from pathlib import Path

from pexpect.fdpexpect import fdspawn

CTRL_C = "\x03"  # the terminal's default INTR character
CTRL_D = "\x04"  # and its default EOF character


class TerminalProcess(fdspawn):
    """``argv`` started on a new pseudo-terminal of ``rows`` x ``columns``."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        timeout: float,
        dimensions: tuple[int, int] = (24, 80),
    ) -> None:
        controller, terminal = os.openpty()
        rows, columns = dimensions
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        try:
            self.process = subprocess.Popen(
                ["env", "--default-signal", "setsid", "--ctty", *argv],
                cwd=cwd,
                env=env,
                stdin=terminal,
                stdout=terminal,
                stderr=terminal,
            )
        finally:
            os.close(terminal)  # the command's alone: its exit then reads as the end here
        super().__init__(controller, timeout=timeout, encoding="utf-8")

    def sendintr(self) -> None:
        self.send(CTRL_C)

    def sendeof(self) -> None:
        self.send(CTRL_D)

    def close(self, force: bool = True) -> None:
        """Wait for the command to exit (kill it first with ``force``), then close the
        terminal. ``exitstatus`` is then its exit status (None if a signal ended it)."""
        if force and self.process.poll() is None:
            self.process.kill()
        code = self.process.wait(timeout=30)
        self.exitstatus = code if code >= 0 else None
        super().close()
