"""Whether a worker process's database pool can serve the runs it executes at once.

A run holds a pooled connection only while it computes (at most ``ADSTUDIO_STEP_SLOTS``
runs of a process at a time; every thread with the gate off) and for the moment of a
write of streamed text; it holds none while it waits on its provider or for the gate
(``step_gate.provider_wait``). The heartbeat thread takes one per beat. A pool smaller
than that makes the runs that compute queue for connections, and past the pool's wait
limit fail, so a worker checks its pool when it starts and refuses to start, saying what
to set, rather than stall under its first burst.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connections

# Beside the runs that compute: the heartbeats, and a write of streamed text or a sweep.
_BESIDE_THE_RUNS = 2


def connections_needed(*, threads: int, slots: int) -> int:
    """Pooled connections a process with ``threads`` task threads and a step gate of
    ``slots`` (0: no gate) needs so that no run computing waits for one."""
    computing = min(slots, threads) if slots else threads
    return computing + _BESIDE_THE_RUNS


def pool_max_size(alias: str = "default") -> int | None:
    """The database pool's size, or None when connections are not pooled (each thread
    then holds its own)."""
    pool = connections.settings[alias].get("OPTIONS", {}).get("pool")
    if not pool:
        return None
    return pool.get("max_size") if isinstance(pool, dict) else None


def shortfall(*, threads: int, slots: int, pool_size: int | None) -> str | None:
    """Why the pool cannot serve the process, naming what to set; None when it can."""
    if pool_size is None:
        return None
    needed = connections_needed(threads=threads, slots=slots)
    if pool_size >= needed:
        return None
    computing = (
        f"ADSTUDIO_STEP_SLOTS={slots} of them compute at once"
        if slots and slots < threads
        else "all of them may compute at once"
        + (" (ADSTUDIO_STEP_SLOTS=0: no step gate)" if not slots else "")
    )
    return (
        f"ADSTUDIO_DB_POOL_MAX_SIZE={pool_size} is too small for this worker: it runs "
        f"{threads} task threads, {computing}, and it needs {needed} database connections "
        f"(one per run computing, {_BESIDE_THE_RUNS} for heartbeats and streamed text). Set "
        f"ADSTUDIO_DB_POOL_MAX_SIZE={needed} or more, or run fewer threads (--concurrency) "
        + (
            "or fewer step slots (ADSTUDIO_STEP_SLOTS)."
            if slots
            else "or turn the step gate on (ADSTUDIO_STEP_SLOTS=2, the default)."
        )
    )


def worker_threads(pool_cls: type, concurrency: int) -> int:
    """Task threads per process of a Celery pool: one for prefork and solo, whose
    processes run one task at a time; ``concurrency`` for the thread pool."""
    from celery.concurrency.prefork import TaskPool as PreforkPool
    from celery.concurrency.solo import TaskPool as SoloPool

    if isinstance(pool_cls, type) and issubclass(pool_cls, PreforkPool | SoloPool):
        return 1
    return concurrency


def check_worker(pool_cls: type, concurrency: int) -> str | None:
    """The start-up check of a worker process: why it cannot serve its runs, or None."""
    return shortfall(
        threads=worker_threads(pool_cls, concurrency),
        slots=settings.ADSTUDIO_STEP_SLOTS,
        pool_size=pool_max_size(),
    )
