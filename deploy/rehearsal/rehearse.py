"""A rehearsal of AdStudio on several hosts, on one machine, as root: each host a network
namespace with its own address and disk, configured only as docs/DEPLOYMENT.md says,
haproxy in front; then the story through the balancer and the faults, one line a check.

    sudo .venv/bin/python deploy/rehearsal/rehearse.py [--checks story,cancel,...] [--keep]

    lb       10.77.0.5    haproxy (docs/DEPLOYMENT.md's configuration)
    db       10.77.0.10   PostgreSQL, Redis, an S3-compatible server (moto), the model
                          provider (deploy/rehearsal/director.py: no real one is reachable)
    web1/2   10.77.0.21-22  gunicorn, 2 uvicorn workers each, after collectstatic
    worker1/2  10.77.0.31-32  a Celery worker each (8 threads); they sweep, no beat
    client   10.77.0.99   where this script's requests come from

The checks (all by default): story, cancel, dead-worker, partition, clock, reload, redis,
web-lost. Each prints ``PASS`` or ``FAIL``, what it measured, and the bar where the issue
sets one. Exit status 0 when every check passed, 1 otherwise, 2 when this machine cannot
rehearse (not root, no ``ip netns``, no haproxy or faketime), saying why.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hosts import Network, Process, address, enter, inside, kill_host, run, wait_until  # noqa: E402

from testbed.lifetime import tethered  # noqa: E402

CHECKS = ("story", "cancel", "dead-worker", "partition", "clock", "reload", "redis", "web-lost")
# The time bars, for a quiet machine; ``--slack`` multiplies them on a busy one (the suite
# runs the rehearsal beside its other tests).
BARS = {"cancel": 2.0, "dead-worker": 45.0, "reload": 2.0, "web-lost": 10.0}
SLACK = 1.0
# ``--quick`` (the suite's): the recovery settings shortened and the model's slow replies
# with them, so each fault is over in a fraction of the time; the figures of record are
# taken without it, with the defaults docs/DEPLOYMENT.md gives.
QUICK_ENV = {
    "ADSTUDIO_HEARTBEAT_INTERVAL": "1",
    "ADSTUDIO_RUN_STALE_AFTER": "6",
    "ADSTUDIO_RECOVERY_INTERVAL": "2",
}
# A rolling reload's p99 is the time a web process takes to start, CPU-bound: beside the
# suite on a host running at half its usual speed it reached 7.8 s.
QUICK_BARS = {"dead-worker": 20.0, "reload": 4.0}
WEB_WORKERS = 2  # gunicorn's workers on each web host
QUICK_SCALE = 0.3
QUICK = False


def slow(seconds: float, once: bool = False) -> str:
    """The context that has each of the model's replies take ``seconds`` (shortened with
    the stale limit in a quick rehearsal); ``once``: only the first reply, the first time
    it is asked (not again for the worker that takes the run over)."""
    scaled = seconds * QUICK_SCALE if QUICK else seconds
    return f"[slow {scaled:g}{f' once {uuid.uuid4().hex}' if once else ''}]"


def time_bar(name: str) -> float:
    return (QUICK_BARS.get(name, BARS[name]) if QUICK else BARS[name]) * SLACK


PYTHON = sys.executable
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
HAPROXY = """global
    maxconn 4096
    stats socket {stats} mode 600 level admin
defaults
    mode http
    timeout connect 5s
    timeout client 65s
    timeout server 65s
    timeout check 5s
    retries 3
    retry-on conn-failure empty-response response-timeout
    option redispatch
    option forwardfor
frontend web
    bind {lb}:80
    default_backend adstudio
backend adstudio
    option httpchk GET /readyz
    default-server check inter 2s fall 2 rise 2 on-marked-down shutdown-sessions
    server web1 {web1}:8000
    server web2 {web2}:8000
"""


def cannot_rehearse() -> str:
    """Why this machine cannot run the rehearsal, or ""."""
    if os.geteuid() != 0:
        return "it needs root (network namespaces)"
    for program in ("ip", "haproxy", "redis-server", "runuser"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    if not LIBFAKETIME.exists():
        return "libfaketime is not installed (apt-get install faketime)"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        return "no PostgreSQL server programs under /usr/lib/postgresql"
    probe = run("ip", "netns", "add", "adst-probe", check=False)
    run("ip", "netns", "del", "adst-probe", check=False)
    if probe.returncode:
        return f"ip netns add failed: {probe.stderr.strip()}"
    return ""


class Stack:
    """The hosts' services, each on its host's address and disk."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.network = Network()
        self.secret = secrets.token_urlsafe(50)
        self.bucket = f"adstudio-{uuid.uuid4().hex[:12]}"
        self.processes: dict[str, Process] = {}
        self.model_url = ""

    def disk(self, host: str) -> Path:
        folder = self.work / host
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def env(self, host: str) -> dict[str, str]:
        """docs/DEPLOYMENT.md's environment, for this host (TLS left out: no certificate)."""
        db = address("db")
        disk = self.disk(host)
        environment = {
            "PATH": os.environ["PATH"],
            "HOME": str(disk),
            "DEBUG": "0",
            "SECRET_KEY": self.secret,
            "ALLOWED_HOSTS": ",".join(address(h) for h in ("lb", "web1", "web2")),
            "DATABASE_URL": f"postgres://postgres@{db}:5432/adstudio",
            "ADSTUDIO_DB_POOL_MAX_SIZE": "10",
            "CELERY_BROKER_URL": f"redis://{db}:6379/0",
            "CACHE_URL": f"redis://{db}:6379/1",
            "STATIC_ROOT": str(disk / "static"),
            "MEDIA_ROOT": str(disk / "media"),
            "MEDIA_S3_BUCKET": self.bucket,
            "MEDIA_S3_ENDPOINT_URL": f"http://{db}:9000",
            "MEDIA_S3_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "rehearsal",
            "AWS_SECRET_ACCESS_KEY": "rehearsal",
            "OPENAI_API_KEY": "sk-rehearsal",
            "OPENAI_BASE_URL": self.model_url,
            "ADSTUDIO_OPENAI_MODEL": "gpt-4.1-mini",
            "ADSTUDIO_PROVIDER_FALLBACKS": "",
            "PORT": "8000",
            "WEB_CONCURRENCY": str(WEB_WORKERS),
            "FORWARDED_ALLOW_IPS": address("lb"),
        }
        if QUICK:
            environment.update(QUICK_ENV)
        return environment

    def start(self) -> None:
        """The hosts' services; this process's requests come from the client host."""
        self.network.up()
        enter("client")
        self._database()
        self._redis_s3_and_model()
        # The schema and each web host's static files at once: three processes that wait
        # on the database and the disk more than they compute.
        with ThreadPoolExecutor() as pool:
            steps = [pool.submit(self.manage, "web1", "migrate", "--noinput")]
            steps += [
                pool.submit(self.manage, host, "collectstatic", "--noinput", "--verbosity", "0")
                for host in ("web1", "web2")
            ]
            for step in steps:
                step.result()
        for host in ("web1", "web2"):
            self.spawn_web(host)
        for host in ("worker1", "worker2"):
            self.spawn_worker(host)
        for host in ("web1", "web2"):
            self.wait_web(host)
        for host in ("worker1", "worker2"):
            self.wait_worker(host)
        self._balancer()

    def _database(self) -> None:
        data = self.disk("db") / "pgdata"
        os.chmod(self.work, 0o755)
        shutil.chown(self.disk("db"), "postgres", "postgres")
        binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
        run(
            "runuser",
            "-u",
            "postgres",
            "--",
            str(binaries / "initdb"),
            "--pgdata",
            str(data),
            "--username",
            "postgres",
            "--auth",
            "trust",
            "--no-sync",
        )
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {address('db').rsplit('.', 1)[0]}.0/24 trust\n")
        self.processes["postgres"] = Process(
            "db",
            "postgres",
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-c",
                f"listen_addresses={address('db')}",
                "-c",
                f"unix_socket_directories={self.disk('db')}",
                "-c",
                "max_connections=200",
            ],
            {"PATH": os.environ["PATH"]},
            self.work / "postgres.log",
            self.disk("db"),
            user="postgres",
        ).start()
        import psycopg

        wait_until(
            lambda: (
                psycopg.connect(f"postgres://postgres@{address('db')}/postgres").close() or True
            ),
            timeout=60,
            what="PostgreSQL",
        )
        with psycopg.connect(f"postgres://postgres@{address('db')}/postgres", autocommit=True) as c:
            c.execute("CREATE DATABASE adstudio")

    def _redis_s3_and_model(self) -> None:
        self.start_redis()
        db = address("db")
        self.processes["s3"] = Process(
            "db",
            "s3",
            [PYTHON, "-m", "testbed.fake_s3", "--host", db, "--port", "9000"],
            {"PATH": os.environ["PATH"]},
            self.work / "s3.log",
            ROOT,
        ).start()
        from testbed.fake_s3 import S3Server

        s3 = S3Server(url=f"http://{db}:9000")
        wait_until(lambda: s3.client().create_bucket(Bucket=self.bucket), timeout=30, what="S3")
        director = subprocess.Popen(
            inside(
                "db", *tethered([PYTHON, str(Path(__file__).parent / "director.py"), "--host", db])
            ),
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            cwd=ROOT,
        )
        self.model_url = director.stdout.readline().strip()
        self.director = director

    def start_redis(self) -> None:
        self.processes["redis"] = Process(
            "db",
            "redis",
            [
                "redis-server",
                "--bind",
                address("db"),
                "--port",
                "6379",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ],
            {"PATH": os.environ["PATH"]},
            self.work / "redis.log",
            self.disk("db"),
        ).start()
        import redis

        wait_until(lambda: redis.Redis(host=address("db")).ping(), timeout=20, what="Redis")

    def manage(self, host: str, *args: str) -> str:
        done = subprocess.run(
            inside(host, *tethered([PYTHON, "manage.py", *args])),
            cwd=ROOT,
            env=self.env(host),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} on {host}:\n{done.stderr[-2000:]}")
        return done.stdout

    def spawn_web(self, host: str) -> None:
        """The host's gunicorn started (its static files collected already)."""
        self.processes[host] = Process(
            host,
            "web",
            [
                PYTHON,
                "-m",
                "gunicorn",
                "adstudio.asgi:application",
                "--worker-class",
                "uvicorn_worker.UvicornWorker",
                # Its workers die with it (uvicorn's do not notice a dead master).
                "--config",
                "python:testbed.gunicorn_tethered",
            ],
            self.env(host),
            self.work / f"{host}.log",
            ROOT,
        ).start()

    def wait_web(self, host: str) -> None:
        import httpx

        wait_until(
            lambda: httpx.get(f"http://{address(host)}:8000/readyz", timeout=2).status_code == 200,
            timeout=60,
            what=f"{host} ready",
        )

    def start_worker(self, host: str, env: dict[str, str] | None = None) -> None:
        self.spawn_worker(host, env)
        self.wait_worker(host)

    def spawn_worker(self, host: str, env: dict[str, str] | None = None) -> None:
        number = host[-1]
        self.processes[host] = Process(
            host,
            "worker",
            [
                PYTHON,
                "-m",
                "celery",
                "-A",
                "adstudio",
                "worker",
                "--pool",
                "threads",
                "--concurrency",
                "8",
                "--loglevel",
                "INFO",
                "--hostname",
                f"worker{number}@%h",
            ],
            {**self.env(host), **(env or {})},
            self.work / f"{host}.log",
            ROOT,
        ).start()

    def wait_worker(self, host: str) -> None:
        wait_until(lambda: self.processes[host].log_has(" ready."), timeout=60, what=f"{host}")

    def _balancer(self) -> None:
        config = self.disk("lb") / "haproxy.cfg"
        self.stats = self.disk("lb") / "stats.sock"
        config.write_text(
            HAPROXY.format(
                lb=address("lb"), web1=address("web1"), web2=address("web2"), stats=self.stats
            )
        )
        self.processes["lb"] = Process(
            "lb",
            "haproxy",
            ["haproxy", "-f", str(config)],
            {"PATH": os.environ["PATH"]},
            self.work / "haproxy.log",
            self.disk("lb"),
        ).start()
        import httpx

        wait_until(
            lambda: httpx.get(f"http://{address('lb')}/readyz", timeout=2).status_code == 200,
            timeout=30,
            what="the balancer",
        )

    def balancer(self, command: str) -> str:
        """haproxy's answer to one command on its admin socket."""
        import socket

        with socket.socket(socket.AF_UNIX) as stats:
            stats.connect(str(self.stats))
            stats.sendall(command.encode() + b"\n")
            shown = b""
            while chunk := stats.recv(65536):
                shown += chunk
        return shown.decode()

    def _servers(self) -> dict[str, list[str]]:
        """``show stat``'s row of each web server."""
        rows = (line.split(",") for line in self.balancer("show stat").splitlines())
        return {
            row[1]: row
            for row in rows
            if len(row) > 17 and row[0] == "adstudio" and row[1].startswith("web")
        }

    def servers_up(self) -> dict[str, str]:
        """haproxy's view of the web servers: {"web1": "UP", ...}."""
        return {name: row[17] for name, row in self._servers().items()}

    def sessions_on(self, host: str) -> int:
        """The requests and streams the balancer has on ``host`` now (``scur``)."""
        return int(self._servers()[host][4])

    def stop(self) -> None:
        self.network.down()
        if getattr(self, "director", None) is not None:
            self.director.kill()


# --- the checks ------------------------------------------------------------------------


class Api:
    """A web client of the API, through the balancer or one web host."""

    def __init__(self, base: str, token: str) -> None:
        import httpx

        self.base = base
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Token {token}"}, timeout=70
        )

    def generate(self, context: str = "") -> dict:
        brief = {
            "clientDescription": "Spotify Premium family plan",
            "language": "en",
            "additionalContext": context,
        }
        answer = self.client.post("/api/ai/generate", json={"brief": brief})
        assert answer.status_code == 202, (answer.status_code, answer.text)
        return answer.json()

    def run(self, run_id: str) -> dict:
        return self.client.get(f"/api/runs/{run_id}").json()

    def finished(self, run_id: str, timeout: float = 120) -> dict:
        """The run once it has ended, followed by long polls as docs/api.md's client does:
        each asks for the events after the last it read, so it waits for news."""
        deadline = time.monotonic() + timeout
        after = 0
        while time.monotonic() < deadline:
            page = self.client.get(
                f"/api/runs/{run_id}/events", params={"after": after, "wait": 20}
            ).json()
            if page.get("runStatus") in ("succeeded", "failed", "cancelled"):
                return self.run(run_id)
            after = page.get("lastSeq", after)
        raise TimeoutError(f"run {run_id} did not finish within {timeout:g} s")


def token_for(stack: Stack) -> str:
    code = (
        "import uuid; from django.contrib.auth.models import User; "
        "from accounts.services import token_create; "
        "u = User.objects.create(username='rehearsal-' + uuid.uuid4().hex[:8]); "
        "print(token_create(user=u)[1])"
    )
    return stack.manage("web1", "shell", "--no-imports", "-c", code).strip()


def query(sql: str, *params) -> list[tuple]:
    import psycopg

    with psycopg.connect(f"postgres://postgres@{address('db')}/adstudio") as connection:
        return connection.execute(sql, params).fetchall()


def via(url: str, host: str) -> str:
    """``url`` (made by the balancer's host) sent to ``host``'s web server instead."""
    return url.replace(f"http://{address('lb')}", f"http://{address(host)}:8000")


def check_story(stack: Stack, api: Api) -> tuple[bool, str]:
    import httpx

    started = api.generate()
    first = api.finished(started["runId"])
    chat = api.client.post(
        f"/api/ads/{started['adId']}/chat", json={"message": "Make the music calmer"}
    )
    second = api.finished(chat.json()["runId"])
    asked = api.client.post(f"/api/ads/{started['adId']}/renders", json={})
    render_id = asked.json()["id"]
    wait_until(
        lambda: api.client.get(f"/api/renders/{render_id}").json()["status"] == "done",
        timeout=60,
        what="the render",
    )
    body = api.client.get(f"/api/renders/{render_id}").json()
    served = []
    for host in ("web1", "web2"):
        whole = httpx.get(via(body["audioUrl"], host), timeout=30)
        part = httpx.get(via(body["audioUrl"], host), headers={"Range": "bytes=0-99"}, timeout=30)
        served.append(f"{host} {whole.status_code}/{part.status_code}")
    drafts = query(
        "SELECT count(*) FROM drafts_draft d JOIN drafts_ad a ON a.id = d.ad_id WHERE a.id = %s",
        uuid.UUID(started["adId"]),
    )[0][0]
    evaluated = _evaluate_from_a_worker_host(stack)
    passed = (
        first["status"] == second["status"] == "succeeded"
        and served == ["web1 200/206", "web2 200/206"]
        and drafts == 2
        and evaluated == 2
    )
    return passed, (
        f"generate {first['status']}, chat {second['status']} through the balancer "
        f"({asked.status_code} render); audio {', '.join(served)}; {drafts} drafts; "
        f"evaluate from worker1: {evaluated} cases run by the workers and stored"
    )


def _evaluate_from_a_worker_host(stack: Stack) -> int:
    """``manage.py evaluate`` on a worker host, with two cases of the golden set: its
    runs go through the broker to the workers. The cases evaluated and stored."""
    import yaml

    golden = yaml.safe_load((ROOT / "evals" / "dev.yaml").read_text())
    small = stack.disk("worker1") / "two-cases.yaml"
    small.write_text(yaml.safe_dump({"name": "rehearsal", "cases": golden["cases"][:2]}))
    stack.manage("worker1", "evaluate", "--dataset", str(small), "--concurrency", "2")
    return query(
        "SELECT count(*) FROM evaluations_evaluationresult r JOIN "
        "evaluations_evaluationrun e ON e.id = r.run_id WHERE e.dataset_name = 'rehearsal'"
    )[0][0]


def _stream(base: str, token: str, run_id: str, seen: list, after: int = 0) -> None:
    """Read the run's event stream from ``base``, appending (seq, type) to ``seen``."""
    import httpx

    headers = {"Authorization": f"Token {token}", "Accept": "text/event-stream"}
    if after:
        headers["Last-Event-ID"] = str(after)
    with httpx.stream(
        "GET", f"{base}/api/runs/{run_id}/events/stream", headers=headers, timeout=70
    ) as response:
        event_id, kind = None, None
        for line in response.iter_lines():
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("event: "):
                kind = line[7:]
            elif line == "" and event_id is not None:
                seen.append((event_id, kind, time.monotonic()))
                event_id = None


def check_cancel(stack: Stack, api: Api, token: str) -> tuple[bool, str]:
    started = api.generate(slow(30))
    seen: list = []
    reader = threading.Thread(
        target=_stream, args=(f"http://{address('web1')}:8000", token, started["runId"], seen)
    )
    reader.start()
    wait_until(
        lambda: any(k == "model_call.started" for _, k, _ in seen),
        timeout=30,
        what="the model call",
    )
    other = Api(f"http://{address('web2')}:8000", token)
    asked = time.monotonic()
    other.client.post(f"/api/runs/{started['runId']}/cancel")
    reader.join(timeout=30)
    ended = [t for _, k, t in seen if k == "run.finished"]
    took = ended[0] - asked if ended else float("inf")
    status = api.run(started["runId"])["status"]
    bar = time_bar("cancel")
    return status == "cancelled" and took < bar, (
        f"cancel through web2 ended the run streamed from web1 in {took:.2f} s ({status}; "
        f"bar < {bar:g} s)"
    )


def _run_on(stack: Stack, api: Api, holder: str, other: str, context: str) -> dict:
    """A run of ``context`` taken by ``holder``'s worker: ``other``'s is stopped until the
    run is running, then started again."""
    stack.processes[other].stop()
    started = api.generate(context)
    wait_until(
        lambda: api.run(started["runId"])["status"] == "running",
        timeout=30,
        what="the run to start",
    )
    stack.start_worker(other)
    return started


def _taken_over_while_cut(stack: Stack, host: str, run_id: uuid.UUID) -> float:
    """Cut ``host`` off and wait until its run is claimed a second time (seconds); the host
    is healed whatever the wait found, so the checks after this one have it back."""
    stack.network.cut(host)
    try:
        return wait_until(
            lambda: query("SELECT claims FROM conversations_run WHERE id = %s", run_id)[0][0] == 2,
            timeout=120,
            what="the run to be taken over",
        )
    finally:
        stack.network.heal(host)


def check_dead_worker(stack: Stack, api: Api) -> tuple[bool, str]:
    started = _run_on(stack, api, "worker1", "worker2", slow(120, once=True))
    run_id = uuid.UUID(started["runId"])
    died = time.monotonic()
    kill_host("worker1")  # the host's power goes: no process closes anything
    try:
        resumed_after = _taken_over_while_cut(stack, "worker1", run_id)
    finally:
        stack.start_worker("worker1")
    bar = time_bar("dead-worker")
    return resumed_after < bar, (
        f"the dead worker host's run resumed on worker2 after {resumed_after:.1f} s "
        f"(bar < {bar:g} s; {time.monotonic() - died:.0f} s since its death)"
    )


def check_partition(stack: Stack, api: Api) -> tuple[bool, str]:
    started = _run_on(stack, api, "worker1", "worker2", slow(40, once=True))
    run_id = uuid.UUID(started["runId"])
    taken = _taken_over_while_cut(stack, "worker1", run_id)
    log = stack.processes["worker1"]  # healed, it comes back believing it holds the run
    stopped = wait_until(
        lambda: log.log_has(f"run {run_id} was taken over by another worker"),
        timeout=60,
        what="the partitioned worker to find its run taken over",
    )
    finished = api.finished(started["runId"], timeout=180)
    drafts = query(
        "SELECT kind, version FROM drafts_draft WHERE ad_id = %s ORDER BY 1, 2",
        uuid.UUID(started["adId"]),
    )
    finishes = query(
        "SELECT count(*) FROM conversations_runevent WHERE run_id = %s AND type = 'run.finished'",
        run_id,
    )[0][0]
    passed = finished["status"] == "succeeded" and drafts == [("music", 1)] and finishes == 1
    return passed, (
        f"partitioned worker's run taken over after {taken:.1f} s; healed, it stopped "
        f"{stopped:.1f} s later on finding that; {finished['status']}, drafts {drafts}, "
        f"{finishes} run.finished"
    )


def check_clock(stack: Stack, api: Api) -> tuple[bool, str]:
    stack.processes["worker2"].stop()
    skewed = {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME": "-60s",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    stack.start_worker("worker2", env=skewed)
    stack.processes["worker1"].stop()
    try:
        started = api.generate(slow(20))  # two replies of 20 s: past the stale limit
        finished = api.finished(started["runId"], timeout=120)
        times = query(
            "SELECT created_at, started_at, finished_at, claims FROM "
            "conversations_run WHERE id = %s",
            uuid.UUID(started["runId"]),
        )[0]
    finally:
        stack.processes["worker2"].stop()
        for host in ("worker1", "worker2"):
            stack.spawn_worker(host)
        for host in ("worker1", "worker2"):
            stack.wait_worker(host)
    created, begun, ended, claims = times
    ordered = created <= begun <= ended
    passed = finished["status"] == "succeeded" and claims == 1 and ordered
    return passed, (
        f"a worker host 60 s behind ran a run longer than the stale limit: "
        f"{finished['status']}, claims {claims}, "
        f"created <= started <= finished: {ordered}"
    )


def reload_drained(stack: Stack, host: str) -> None:
    """docs/DEPLOYMENT.md's rolling reload of one web host: drained at the balancer (no new
    requests; those it holds finish), out of the balancer while gunicorn's HUP replaces its
    processes, back once the new ones answer. Reloaded in place instead, the requests sent
    to it wait in its socket until a new process starts, and where that start outlasts two
    health checks (4 s) the balancer marks the host down and cuts them."""
    server = f"adstudio/{host}"
    stack.balancer(f"set server {server} state drain")
    wait_until(lambda: stack.sessions_on(host) == 0, timeout=70, what=f"{host} drained")
    stack.balancer(f"set server {server} state maint")
    log = stack.processes[host].log
    booted = log.read_text(errors="replace").count("Application startup complete")
    stack.processes[host].signal(signal.SIGHUP)
    wait_until(
        lambda: (
            log.read_text(errors="replace").count("Application startup complete")
            >= booted + WEB_WORKERS
        ),
        timeout=60,
        what=f"{host}'s new workers",
    )
    stack.wait_web(host)
    stack.balancer(f"set server {server} state ready")
    wait_until(lambda: stack.servers_up()[host] == "UP", timeout=30, what=f"{host} back up")


def check_reload(stack: Stack, token: str) -> tuple[bool, str]:
    import httpx

    stop = threading.Event()
    answers: list = []

    def paced() -> None:
        client = httpx.Client(
            headers={"Authorization": f"Token {token}"},
            timeout=30,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        while not stop.is_set():
            started = time.monotonic()
            try:
                status: object = client.get(f"http://{address('lb')}/api/ads/").status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            answers.append((status, time.monotonic() - started))
            time.sleep(0.5)

    clients = [threading.Thread(target=paced) for _ in range(20)]
    for client in clients:
        client.start()
    try:
        time.sleep(3)
        for host in ("web1", "web2"):  # rolling: one host at a time, the next once it serves
            reload_drained(stack, host)
            time.sleep(3)
    finally:  # a reload that fails stops the clients too, so the rehearsal goes on
        stop.set()
        for client in clients:
            client.join()
    failed = [s for s, _ in answers if s != 200]
    latencies = sorted(t for _, t in answers)
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    bar = time_bar("reload")
    why = f" ({', '.join(f'{n} {s}' for s, n in Counter(failed).items())})" if failed else ""
    return not failed and p99 < bar, (
        f"rolling reload under 20 paced clients: {len(failed)} failed of {len(answers)}{why}, "
        f"p99 {p99 * 1000:.0f} ms (bar 0 and < {bar:g} s)"
    )


def check_redis(stack: Stack, api: Api) -> tuple[bool, str]:
    import httpx

    # Held down for 20 s, 11 s in a quick rehearsal: five of haproxy's checks or more.
    held = 6 if QUICK else 15
    stack.processes["redis"].stop()
    went = time.monotonic()
    try:
        time.sleep(5)  # haproxy checks every 2 s, down after 2 failures
        states = stack.servers_up()
        ready = [
            httpx.get(f"http://{address(h)}:8000/readyz", timeout=5).json()["status"]
            for h in ("web1", "web2")
        ]
        accepted = [api.generate() for _ in range(3)]
        time.sleep(held)
        states_later = stack.servers_up()
    finally:
        down = time.monotonic() - went
        stack.start_redis()
    finished = [api.finished(a["runId"], timeout=120)["status"] for a in accepted]
    both_in = states == states_later == {"web1": "UP", "web2": "UP"}
    passed = both_in and ready == ["degraded", "degraded"] and finished == ["succeeded"] * 3
    return passed, (
        f"Redis down {down:.0f} s: balancer {states_later}, /readyz {ready}; 3 generates accepted "
        f"and stored, then {finished}"
    )


def check_web_lost(stack: Stack, api: Api, token: str) -> tuple[bool, str]:
    """Streams open through the balancer when web1's network goes: each client reconnects
    through the balancer with Last-Event-ID, as EventSource does."""
    runs = [api.generate("[slow 4]") for _ in range(6)]
    seen: dict[str, list] = {r["runId"]: [] for r in runs}
    lost_at: list[float] = []
    resumed: dict[str, float] = {}

    def follow(run_id: str) -> None:
        events = seen[run_id]
        while True:
            with contextlib.suppress(Exception):  # the connection cut: reconnect, as EventSource
                _stream(
                    f"http://{address('lb')}",
                    token,
                    run_id,
                    events,
                    after=events[-1][0] if events else 0,
                )
            if lost_at and run_id not in resumed and events and events[-1][2] > lost_at[0]:
                resumed[run_id] = events[-1][2] - lost_at[0]
            if any(k == "run.finished" for _, k, _ in events):
                return
            time.sleep(0.5)

    followers = [threading.Thread(target=follow, args=(r["runId"],)) for r in runs]
    for follower in followers:
        follower.start()
    time.sleep(2)
    lost_at.append(time.monotonic())
    stack.network.cut("web1")
    for follower in followers:
        follower.join(timeout=180)
    stack.network.heal("web1")
    whole = all(
        [e[0] for e in events] == list(range(1, len(events) + 1)) for events in seen.values()
    )
    slowest = max(resumed.values(), default=0.0)
    finished = all(any(k == "run.finished" for _, k, _ in events) for events in seen.values())
    bar = time_bar("web-lost")
    return whole and finished and slowest < bar, (
        f"web1 lost with {len(runs)} streams open: every event once and in order: {whole}; "
        f"the last stream's next event {slowest:.1f} s after the loss (bar < {bar:g} s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", default=",".join(CHECKS))
    parser.add_argument(
        "--keep", action="store_true", help="leave the work folder (a failure leaves it too)"
    )
    parser.add_argument(
        "--slack", type=float, default=1.0, help="the time bars times this (a busy machine)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="shortened recovery settings and slow replies (the suite's); no figures of record",
    )
    args = parser.parse_args()
    global SLACK, QUICK
    SLACK, QUICK = args.slack, args.quick
    checks = [c for c in args.checks.split(",") if c]
    unknown = set(checks) - set(CHECKS)
    if unknown:
        parser.error(f"unknown checks {sorted(unknown)}: choose from {', '.join(CHECKS)}")
    why = cannot_rehearse()
    if why:
        print(f"SKIP the rehearsal: {why}")
        return 2
    work = Path(tempfile.mkdtemp(prefix="adstudio-rehearsal-"))
    stack = Stack(work)
    results: dict[str, tuple[bool, str]] = {}
    try:
        began = time.monotonic()
        stack.start()
        token = token_for(stack)
        print(f"hosts up in {time.monotonic() - began:.0f} s", flush=True)
        api = Api(f"http://{address('lb')}", token)
        runners = {
            "story": lambda: check_story(stack, api),
            "cancel": lambda: check_cancel(stack, api, token),
            "dead-worker": lambda: check_dead_worker(stack, api),
            "partition": lambda: check_partition(stack, api),
            "clock": lambda: check_clock(stack, api),
            "reload": lambda: check_reload(stack, token),
            "redis": lambda: check_redis(stack, api),
            "web-lost": lambda: check_web_lost(stack, api, token),
        }
        for name in checks:
            began = time.monotonic()
            try:
                results[name] = runners[name]()
            except Exception as exc:
                results[name] = (False, f"{type(exc).__name__}: {exc}")
            passed, said = results[name]
            took = time.monotonic() - began
            print(f"{'PASS' if passed else 'FAIL'} {name}: {said} [{took:.0f} s]", flush=True)
    finally:
        stack.stop()
        (work / "results.json").write_text(json.dumps(results, indent=2))
        failed = not results or not all(passed for passed, _ in results.values())
        if args.keep or failed:  # a failure's logs are what explains it
            print(f"logs in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if all(passed for passed, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
