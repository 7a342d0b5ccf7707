"""Periodic sweeps (the recovery of runs and renders, the prune of files) run by every
worker process, one at a time across all hosts: no beat process, so no single host whose
death stops recovery, and no hand-over when one dies.

Each worker process has one thread that runs each registered sweep every ``interval``
seconds (with a random tenth either way, so the processes do not keep step), each in a
transaction holding a PostgreSQL advisory lock of its own, taken without waiting: while
one process sweeps, the others skip that turn. A dead process's lock ends with its
transaction; what a sweep sends is sent once it commits. A process that stops answering
mid-sweep (its host cut off, the process frozen) would keep the lock as long as the server
keeps its session: for a host cut off while the server's last reply was unacknowledged,
the kernel's retransmissions, about fifteen minutes, during which no host sweeps. So the
server ends a sweep's session once it has waited ``silent_limit`` for its next statement.
The apps register their sweeps (``register``); the worker starts the thread when it is
ready (``start``).
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import DatabaseError, connection, transaction

logger = logging.getLogger(__name__)

# The least time the server waits for a sweep's next statement before it ends the session
# (``Sweep.silent_limit``): a recovery sweep's statements follow each other within
# milliseconds, so this is seconds of a process frozen, not a slow sweep.
MIN_SILENT_LIMIT_S = 10.0
_IDLE_IN_TRANSACTION_TIMEOUT = "25P03"  # the SQLSTATE of a session ended for it


@dataclass
class Sweep:
    name: str
    interval: float
    run: Callable[[], object]
    due: float = 0.0  # monotonic; 0: at once
    lock_key: int = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(f"adstudio.sweep.{self.name}".encode()).digest()
        self.lock_key = int.from_bytes(digest[:8], "big", signed=True)

    @property
    def silent_limit(self) -> float:
        """Seconds the server waits, inside the sweep's transaction, for its next statement
        before it ends the session and the lock with it: the sweep's interval, a turn, and
        at least ``MIN_SILENT_LIMIT_S`` (a prune that lists a bucket between its statements
        has its hour)."""
        return max(self.interval, MIN_SILENT_LIMIT_S)


_sweeps: dict[str, Sweep] = {}
_thread: threading.Thread | None = None
_stopping = threading.Event()


def register(name: str, *, interval: float, run: Callable[[], object]) -> None:
    """Run ``run`` every ``interval`` seconds in some worker process, never two at once."""
    _sweeps[name] = Sweep(name, interval, run)


def start() -> None:
    """This process's sweeping thread (a worker calls it when it is ready); the first
    sweeps run at once, to take up what a process that died left."""
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    _stopping.clear()
    _thread = threading.Thread(target=_loop, name="sweeps", daemon=True)
    _thread.start()


def stop() -> None:
    _stopping.set()
    if _thread is not None:
        _thread.join(timeout=10)


def _loop() -> None:
    while not _stopping.is_set():
        now = time.monotonic()
        for sweep in list(_sweeps.values()):
            if now >= sweep.due:
                sweep_once(sweep)
                sweep.due = time.monotonic() + sweep.interval * random.uniform(0.9, 1.1)
        wake = min((s.due for s in _sweeps.values()), default=time.monotonic() + 1.0)
        _stopping.wait(max(0.05, wake - time.monotonic()))


def sweep_once(sweep: Sweep) -> bool:
    """Run the sweep if no other process is running it; whether this one did. A database
    that cannot be reached skips the turn (the next one tries again)."""
    try:
        with transaction.atomic():
            if not _try_lock(sweep.lock_key, silent_limit=sweep.silent_limit):
                return False
            sweep.run()
        return True
    except DatabaseError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == _IDLE_IN_TRANSACTION_TIMEOUT:
            logger.warning(
                "sweep %s ended by the database: %g s without a statement (its silent limit)",
                sweep.name,
                sweep.silent_limit,
            )
        else:
            logger.warning("sweep %s skipped: the database is unreachable (%s)", sweep.name, exc)
        return False
    except Exception:
        logger.exception("sweep %s failed", sweep.name)
        return False
    finally:
        connection.close()  # held for one sweep, not between sweeps


def _try_lock(key: int, *, silent_limit: float) -> bool:
    """The sweep's lock until the transaction ends, if no other process holds it; the
    server ends the session if it waits ``silent_limit`` seconds for the next statement."""
    if connection.vendor != "postgresql":
        return True  # one process (the embedded default): nobody to exclude
    with connection.cursor() as cursor:
        cursor.execute(
            # set_config(..., true): for this transaction only, as SET LOCAL
            "SELECT set_config('idle_in_transaction_session_timeout', %s, true), "
            "pg_try_advisory_xact_lock(%s)",
            [f"{round(silent_limit * 1000)}ms", key],
        )
        return bool(cursor.fetchone()[1])
