"""Shared set-up for benchmarks: a database of their own next to DATABASE_URL's, migrated,
so a benchmark never touches the development or test data.
"""

from __future__ import annotations

import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_DATABASE = "adstudio_bench"
# Beside another checkout on the same servers: ADSTUDIO_BENCH_DATABASE_PREFIX=other_bench
# names every benchmark's database other_bench* instead of adstudio_bench*.
DATABASE_PREFIX = os.environ.get("ADSTUDIO_BENCH_DATABASE_PREFIX", DEFAULT_DATABASE)


def bench_database_url(database: str = DEFAULT_DATABASE) -> str:
    """DATABASE_URL with its database name replaced by ``database`` (its ``adstudio_bench``
    replaced by ``ADSTUDIO_BENCH_DATABASE_PREFIX`` when that is set)."""
    if not DATABASE_PREFIX.isidentifier():
        sys.exit(
            f"ADSTUDIO_BENCH_DATABASE_PREFIX={DATABASE_PREFIX!r}: use letters, digits and "
            "underscores, not starting with a digit"
        )
    if database.startswith(DEFAULT_DATABASE):
        database = DATABASE_PREFIX + database.removeprefix(DEFAULT_DATABASE)
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")):
        sys.exit(
            "Set DATABASE_URL to a PostgreSQL server, e.g. "
            "DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio; the benchmark creates "
            f"and uses a database named {database!r} on that server."
        )
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=f"/{database}"))


def create_database(url: str) -> None:
    """CREATE DATABASE if it does not exist (connecting to the server's 'postgres' db)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    """Point Django at ``url``, migrate it and vacuum it.

    Migrated by a process of its own, as a deployment migrates: ``migrate`` builds the
    models of every migration's state, and Django counts each field it makes on the
    ``Field`` class (``Field.creation_counter += 1``). Past 1,000 changes of a class,
    CPython 3.13 stops caching attribute lookups on it and on its subclasses for the rest
    of the process, so every field's attribute read would cost a walk of its classes in
    the benchmark and in no web or worker process (docs/benchmarks/HISTORY.md, "The
    loop's lost 12%").

    Every run of a benchmark leaves dead rows behind (a run's row is updated at each
    step). A production server's autovacuum clears them; where it is off (this
    machine's PostgreSQL has ``autovacuum = off``) they pile up from one invocation to
    the next and each measures slower than the one before. So every invocation starts
    from a vacuumed database, as autovacuum would keep it.
    """
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
    migrate(url)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def migrate(url: str) -> None:
    """``manage.py migrate`` on ``url`` in a process of its own (``setup_django`` says
    why not in the benchmark's)."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0", "--skip-checks"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url},
        check=True,
    )


def bench_django(database: str, *, broker_url: str | None = None) -> str:
    """Django set up on the benchmark database ``database`` (created if need be, migrated,
    vacuumed), with ``broker_url`` as its broker when given (set before the settings
    load); the database's URL."""
    url = bench_database_url(database)
    create_database(url)
    if broker_url is not None:
        os.environ["CELERY_BROKER_URL"] = broker_url
    setup_django(url)
    return url


# Set in every Redis database a benchmark empties: one without it, if not empty, holds
# someone else's keys (a test run's, a developer's broker) and is never flushed.
BENCH_MARKER = "adstudio:benchmark-owned"


def claim_redis(url: str) -> None:
    """Empty the Redis database at ``url`` for a benchmark, if it is empty or an earlier
    benchmark marked it; else stop, naming it. A benchmark never flushes what it did not
    create."""
    import redis

    client = redis.Redis.from_url(url)
    if client.dbsize() and not client.exists(BENCH_MARKER):
        sys.exit(
            f"{url} holds {client.dbsize()} keys that no benchmark wrote; choose an empty "
            "Redis database (--broker-url, --cache-url or the environment variable the "
            "benchmark's help names)."
        )
    client.flushdb()
    client.set(BENCH_MARKER, "1")


def empty_work_queue(broker_url: str) -> None:
    """Start with no work pending: the broker's queue emptied and the runs an interrupted
    earlier invocation left queued or running ended. A worker's start-up recovery sweep
    would otherwise take them up again and measure them along with this invocation's."""
    from django.utils import timezone

    from conversations.models import Run

    claim_redis(broker_url)
    leftover = Run.objects.filter(status__in=["queued", "running"]).update(
        status="failed",
        finished_at=timezone.now(),
        error_code="benchmark_leftover",
        error_message="Left unfinished by an earlier benchmark invocation.",
    )
    if leftover:
        print(f"ended {leftover} runs an earlier invocation left unfinished")


def machine() -> dict[str, str | int]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = f"PostgreSQL {cursor.fetchone()[0]}"
    return {
        "cores": os.cpu_count() or 0,
        "cpu": cpu,
        "python": platform.python_version(),
        "postgres": postgres,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class CpuSteal:
    """The share of the machine's CPU time its hypervisor gave to others while the block
    ran (``steal`` in /proc/stat; None where there is no such file), and the CPU's speed
    as the block began: the milliseconds of a fixed pure-Python loop.

    On a shared virtual machine the same code measures slower under steal, and also when
    the host slows the CPU down without reporting steal (the reference loop then takes
    longer): compare figures taken at a similar reference speed and under little steal."""

    percent: float | None = None
    reference_ms: float | None = None

    def __enter__(self) -> CpuSteal:
        self.reference_ms = reference_loop_ms()
        self._start = _cpu_ticks()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _cpu_ticks()
        if self._start and end:
            spent = [b - a for a, b in zip(self._start, end, strict=True)]
            self.percent = 100 * spent[7] / max(sum(spent), 1)  # the 8th field is steal

    def report(self) -> str:
        steal = "unknown" if self.percent is None else f"{self.percent:.1f}%"
        return (
            f"  cpu steal {steal}, reference loop {self.reference_ms:.0f} ms at the start "
            "(compare figures taken at a similar reference and under little steal)"
        )


def reference_loop_ms() -> float:
    """The best of three timings of a fixed pure-Python loop: this CPU's speed right now."""
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for n in range(2_000_000):
            total += n
        timings.append((time.perf_counter() - started) * 1000)
    return min(timings)


def process_cpu_seconds(
    *, session: int | None = None, name: str | None = None, pids: set[int] | None = None
) -> float:
    """User and system CPU seconds of the running processes of ``session`` (a process
    started by ``start`` leads its own), named ``name``, or with one of ``pids``.
    Processes that exit take their time with them: compare over a window in which they
    all live."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # ended meanwhile
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        if (
            (session is not None and int(fields[3]) == session)
            or comm == name
            or (pids is not None and int(stat.parent.name) in pids)
        ):
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def commit_latency(url: str, commits: int = 50) -> dict[str, float]:
    """The disk as the benchmark found it: milliseconds of a single-row INSERT committed
    durably (``synchronous_commit`` on, one transaction each, as pg_test_fsync's write
    and flush), median and mean of ``commits``. The CPU reference loop and the steal do
    not see a disk another tenant keeps busy; this does: a figure is comparable to
    another taken at a similar commit latency."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SET synchronous_commit TO on")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS bench_commit_probe "
            "(id bigserial PRIMARY KEY, at timestamptz)"
        )
        took = []
        for _ in range(commits):
            started = time.perf_counter()
            connection.execute("INSERT INTO bench_commit_probe (at) VALUES (now())")
            took.append((time.perf_counter() - started) * 1000)
        connection.execute("TRUNCATE bench_commit_probe")
    return {"median_ms": statistics.median(took), "mean_ms": statistics.fmean(took)}


def transactions_and_flushes(url: str) -> tuple[int, int]:
    """(transactions committed in the database of ``url``, WAL flushes of the server):
    read before and after some work, their differences count its commits, and its durable
    commits, the ones that waited for the disk (a read-only transaction flushes nothing).
    The flushes are the server's (``pg_stat_wal.wal_sync``): nothing else may write to it
    meanwhile. An idle backend reports its statistics to these views within 10 s
    (PostgreSQL's ``PGSTAT_IDLE_INTERVAL``): the reading waits for that first."""
    import psycopg

    time.sleep(11)
    with psycopg.connect(url, autocommit=True) as connection:
        committed = connection.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()[0]
        flushes = connection.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()[0]
    return committed, flushes


def commit_latency_report(before: dict[str, float], after: dict[str, float]) -> str:
    return (
        f"  durable commit {before['median_ms']:.2f} / {before['mean_ms']:.2f} ms before, "
        f"{after['median_ms']:.2f} / {after['mean_ms']:.2f} ms after (median / mean; compare "
        "figures taken at a commit latency within 2x)"
    )


def backend_pids(url: str) -> set[int]:
    """The PostgreSQL server processes serving ``url``'s database (the benchmark's own,
    not another project's on the same server), but for the one asking."""
    import psycopg

    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid for (pid,) in rows}


def database_cpu_seconds(url: str) -> float:
    """CPU seconds of the server processes of ``url``'s database, read from /proc (the
    server on this machine)."""
    return process_cpu_seconds(pids=backend_pids(url))


def _cpu_ticks() -> list[int] | None:
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    return [int(v) for v in fields[:8]] if len(fields) >= 8 else None


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a measured value)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def write_results(name: str, data: dict) -> Path:
    import json

    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{name}-{stamp}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def free_port() -> int:
    """A free TCP port on loopback, for a server a benchmark starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def web_command(
    port: int, *, workers: int, threads: int, extra: tuple[str, ...] = (), asgi: bool = True
) -> list[str]:
    """The app as README deploys it, on loopback: gunicorn with uvicorn's ASGI workers, or
    (``asgi=False``, the deployment before them) its threaded WSGI workers."""
    if asgi:
        application = [
            "adstudio.asgi:application",
            "--worker-class",
            "uvicorn_worker.UvicornWorker",
        ]
    else:
        application = ["adstudio.wsgi", "--worker-class", "gthread", "--threads", str(threads)]
    return [
        str(Path(sys.executable).parent / "gunicorn"),
        *application,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--no-control-socket",  # its default path is shared by every gunicorn here
        *extra,
    ]


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start ``command`` in its own process group (stop it with ``os.killpg``), its output
    to ``log``."""
    with log.open("w") as out:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def source_revision() -> str:
    """The commit measured and, if the working tree differs from it, a digest of the
    differences (tracked and untracked files): in a checkout others edit, two figures
    are of the same code only if this is the same for both."""
    import hashlib

    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout

    head = git("log", "-1", "--format=%h").decode().strip()
    digest = hashlib.sha1(git("diff", "HEAD"))
    for name in sorted(git("ls-files", "--others", "--exclude-standard", "-z").split(b"\0")):
        path = ROOT / name.decode()
        if name and path.is_file():
            digest.update(name + path.read_bytes())
    if digest.hexdigest() == hashlib.sha1(b"").hexdigest():
        return head
    return f"{head} with uncommitted changes {digest.hexdigest()[:10]}"


def wait_http(url: str, timeout: float = 30) -> None:
    """Until the server a benchmark started answers ``url`` (any answer but a 5xx)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    sys.exit(f"{url} did not answer within {timeout:g} s")
