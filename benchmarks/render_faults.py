"""Scratch tracks under faults, with default settings: does every render end, done or
failed with its error, soon after the fault ends, with no file left that no render names,
and does every audio link answer from any web host?

    .venv/bin/python -m benchmarks.render_faults [--renders 30] [--outage 30]
        [--faults postgres,workers,redis,storage,hosts] [--workers 2] [--concurrency 4]

Everything runs on servers of its own on loopback, nothing shared with the machine's: a
PostgreSQL cluster (initdb; stopped for ``--outage`` seconds by the postgres fault), a
Redis (restarted empty by the redis fault), ``--workers`` Celery worker processes as
docs/DEPLOYMENT.md deploys them, which run the recovery sweeps themselves (every worker
SIGKILLed by the workers fault and started again a second later, as systemd's
``Restart=always`` does), and
gunicorn, through which a client follows every render (``GET /api/renders/{id}``) and
fetches the audio of those made, counting the answers.

For each fault, ``--renders`` renders (distinct combinations of a fresh ad's versions) are
asked for; once some are being made, the fault is thrown. Reported: how long after the
fault's end the last render ended, how each ended, the files in storage that no render
names (temporary ones included), and the client's answers: 5xx other than the documented
503 with ``Retry-After`` while PostgreSQL is stopped, which is counted apart.

- storage: the media folder is a tmpfs of 1 GiB (as root; skipped otherwise, saying so),
  filled to its last byte for 20 s.
- hosts: two web processes and a worker, each with a media folder of its own, sharing an
  S3 bucket (moto's server, ``testbed.fake_s3``, a process of its own): the audio of every
  render asked for through both, whole (200) and by a range (206).

Bars (issue 47): every render done or failed within 60 s of the fault's end, 0 orphan
files, 0 5xx; every audio link served by both hosts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg

from benchmarks._bench_db import ROOT, free_port, write_results
from testbed.fake_s3 import CREDENTIALS, REGION, S3Server
from testbed.worker import WorkerProcess
from tests.support.postgres import PostgresServer
from tests.support.web import WebServer
from tests.support.worker import RedisServer

FAULTS = ("postgres", "workers", "redis", "storage", "hosts")
DATABASE = "adstudio"
DEADLINE_S = 60.0
UNFINISHED = ("queued", "rendering")


def _environment(env: dict[str, str]) -> dict[str, str]:
    environment = {**os.environ, **env}
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    return environment


def manage(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_environment(env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode:
        raise RuntimeError(done.stdout + done.stderr)
    return done.stdout


class Stack:
    """A PostgreSQL, a Redis, workers and a web server of this invocation's own."""

    def __init__(self, args: argparse.Namespace, work: Path, extra: dict[str, str]) -> None:
        self.args = args
        self.work = work
        self.media = work / "media"
        self.media.mkdir(parents=True, exist_ok=True)
        self.extra = extra
        self.postgres = PostgresServer()
        self.redis = RedisServer(log_dir=work)
        self.workers: list[WorkerProcess] = []
        self.webs: list[WebServer] = []

    @property
    def env(self) -> dict[str, str]:
        return {
            "DATABASE_URL": self.postgres.url(DATABASE),
            "CELERY_BROKER_URL": self.redis.url,
            "MEDIA_ROOT": str(self.media),
            **self.extra,
        }

    def start(self, *, workers: int, webs: int) -> None:
        """The servers; each web and worker with a media folder of its own when
        ``extra`` names shared storage (``MEDIA_ROOT`` then is only each one's disk)."""
        self.postgres.start()
        with psycopg.connect(self.postgres.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{DATABASE}"')
        manage("migrate", "--noinput", env=self.env)
        self.redis.start()
        own_disk = "MEDIA_S3_BUCKET" in self.extra
        for n in range(workers):
            env = self._own_disk(f"worker{n}") if own_disk else self.env
            worker = WorkerProcess(
                log_dir=self.work, env=env, concurrency=self.args.concurrency, name=f"w{n}-"
            )
            worker.start(timeout=60)
            self.workers.append(worker)
        for n in range(webs):
            env = self._own_disk(f"web{n}") if own_disk else self.env
            web = WebServer(env={**env, "DEBUG": "0"}, log=self.work / f"web{n}.log")
            self.webs.append(web.start(ready_path="/healthz"))

    def _own_disk(self, host: str) -> dict[str, str]:
        return {**self.env, "MEDIA_ROOT": str(self.work / f"{host}-disk")}

    def stop(self) -> None:
        for web in self.webs:
            web.stop()
        for worker in self.workers:
            worker.kill()
        self.redis.stop()
        self.postgres.remove()

    def ask_for_renders(self, count: int) -> dict:
        """A fresh ad and ``count`` renders of its versions asked for, each sent to the
        workers as the API sends it: ``{"renders": [ids], "token": ...}``."""
        code = SEED.format(count=count)
        return json.loads(manage("shell", "--no-imports", "-c", code, env=self.env))

    def rows(self, ids: list[str]) -> list[tuple[str, str, str]] | None:
        """(id, status, error) of the renders, or None while the database is away."""
        try:
            with psycopg.connect(self.postgres.url(DATABASE), connect_timeout=2) as connection:
                return connection.execute(
                    "SELECT id::text, status, error FROM renders_render WHERE id::text = ANY(%s)",
                    [ids],
                ).fetchall()
        except psycopg.OperationalError:
            return None

    def wait(self, ids: list[str], predicate, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.rows(ids)
            if rows is not None and predicate(rows):
                return rows
            time.sleep(0.2)
        return self.rows(ids)

    def orphans(self) -> list[str]:
        """Files under the media folder that no render names, temporary ones included."""
        with psycopg.connect(self.postgres.url(DATABASE)) as connection:
            named = {
                name
                for audio, wav in connection.execute("SELECT audio, wav FROM renders_render")
                for name in (audio, wav)
                if name
            }
        folder = self.media / "renders"
        stored = {str(p.relative_to(self.media)) for p in folder.rglob("*") if p.is_file()}
        return sorted(stored - named)


SEED = """
import json, uuid
from django.contrib.auth.models import User
from accounts.services import token_create
from drafts.services import ad_create, draft_create
from providers.demo_lines import LINES
from renders.services import render_request
from tests.support.versions import music, voices

owner = User.objects.create(username="bench-" + uuid.uuid4().hex[:8])
token = token_create(user=owner)[1]
ad = ad_create(owner=owner, client="Spotify Premium family plan", language="th", duration_s=30)
thai = LINES["th"].calm
lines = [
    draft_create(ad=ad, version=voices(*(thai[(i + k) % len(thai)] for k in range(4))))[0]
    for i in range(6)
]
beds = [
    draft_create(ad=ad, version=music(f"warm pad at {{80 + 6 * b}} bpm", duration=30))[0]
    for b in range(5)
]
combos = [(v, m) for v in lines for m in beds][:{count}]
asked = [
    render_request(ad=ad, versions={{"voices": v, "music": m, "sfx": None}}, user=owner)[0]
    for v, m in combos
]
print(json.dumps({{"token": token, "renders": [str(r.pk) for r in asked]}}))
"""


class Follower(threading.Thread):
    """A client that follows the renders through the web server, as the review desk's
    player does, and fetches the audio of each one made: the answers it got."""

    def __init__(self, base: str, token: str, ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Token {token}"}, timeout=30
        )
        self.ids = ids
        self.answers: Counter[int] = Counter()
        self.every_503_says_when = True
        self.running = True

    def run(self) -> None:
        while self.running:
            for render_id in self.ids:
                if not self.running:
                    return
                try:
                    answer = self.client.get(f"/api/renders/{render_id}")
                except httpx.HTTPError:
                    self.answers[0] += 1  # no answer at all
                    continue
                self.answers[answer.status_code] += 1
                if answer.status_code == 503 and "Retry-After" not in answer.headers:
                    self.every_503_says_when = False
                if answer.status_code == 200 and answer.json()["status"] == "done":
                    audio = self.client.get(answer.json()["audioUrl"])
                    self.answers[audio.status_code] += 1
            time.sleep(0.2)

    def stop(self) -> dict[int, int]:
        self.running = False
        self.join(timeout=60)
        self.client.close()
        return dict(self.answers)


def throw(stack: Stack, fault: str, args: argparse.Namespace) -> float:
    """Throw ``fault``; the moment it ended (monotonic)."""
    if fault == "postgres":
        stack.postgres.stop()
        time.sleep(args.outage)
        stack.postgres.start()
    elif fault == "workers":
        for worker in stack.workers:
            worker.kill()
        time.sleep(1.0)  # systemd's Restart=always, RestartSec=1
        for worker in stack.workers:
            worker.start(timeout=60)
    elif fault == "redis":
        stack.redis.stop()
        stack.redis.start()  # empty: every message it held is lost
    elif fault == "storage":
        filler = stack.media / "filler"
        try:
            with filler.open("wb") as out:
                while True:
                    out.write(b"\0" * (1 << 20))
                    out.flush()
        except OSError:
            pass  # full to the last byte
        time.sleep(20)
        filler.unlink()
    return time.monotonic()


def one_fault(stack: Stack, fault: str, args: argparse.Namespace) -> dict:
    asked = stack.ask_for_renders(args.renders)
    ids = asked["renders"]
    follower = Follower(stack.webs[0].base, asked["token"], ids)
    follower.start()

    def some_in_flight(rows) -> bool:
        counts = Counter(status for _, status, _ in rows)
        return counts["rendering"] + counts["done"] >= 2

    at_fault = Counter(s for _, s, _ in stack.wait(ids, some_in_flight, timeout=60))
    ended_at = throw(stack, fault, args)
    rows = stack.wait(
        ids, lambda rows: all(s not in UNFINISHED for _, s, _ in rows), timeout=3 * DEADLINE_S
    )
    last_ended_after = time.monotonic() - ended_at
    answers = follower.stop()
    ended = Counter(status for _, status, _ in rows)
    return {
        "renders": len(ids),
        "at_the_fault": dict(at_fault),
        "ended": dict(ended),
        "errors": dict(Counter(error for _, status, error in rows if status == "failed")),
        "last_ended_after_the_fault_s": round(last_ended_after, 1),
        "bar_met": last_ended_after <= DEADLINE_S and not ended.keys() & set(UNFINISHED),
        "orphan_files": stack.orphans(),
        "answers": answers,
        "http_5xx_not_503": sum(n for code, n in answers.items() if code >= 500 and code != 503),
        "every_503_says_when": follower.every_503_says_when,
    }


def hosts(args: argparse.Namespace, work: Path) -> dict:
    """Two web hosts and a worker host, each with a disk of its own, sharing the database,
    Redis and an S3 bucket: every render's audio through both web hosts."""
    port = free_port()
    s3 = subprocess.Popen(
        [sys.executable, "-m", "testbed.fake_s3", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    s3.stdout.readline()  # "S3 server on ...": it listens
    bucket_server = S3Server(url=f"http://127.0.0.1:{port}")
    bucket = bucket_server.bucket()
    shared = {
        "MEDIA_S3_BUCKET": bucket,
        "MEDIA_S3_ENDPOINT_URL": bucket_server.url,
        "MEDIA_S3_REGION": REGION,
        **CREDENTIALS,
    }
    stack = Stack(args, work / "hosts", shared)
    try:
        stack.start(workers=1, webs=2)
        asked = stack.ask_for_renders(min(args.renders, 10))
        ids = asked["renders"]
        stack.wait(ids, lambda rows: all(s == "done" for _, s, _ in rows), timeout=120)
        served: Counter[str] = Counter()
        headers = {"Authorization": f"Token {asked['token']}"}
        one, two = stack.webs
        for render_id in ids:
            body = httpx.get(f"{one.base}/api/renders/{render_id}", headers=headers).json()
            for link in (body["audioUrl"], body["wavUrl"]):
                for base in (one.base, two.base):  # the link as made, and through the other
                    url = link.replace(one.base, base)
                    served[str(httpx.get(url, timeout=30).status_code)] += 1
                    ranged = httpx.get(url, headers={"Range": "bytes=0-1023"}, timeout=30)
                    served[f"{ranged.status_code} (range)"] += 1
        disks = [p.name for p in stack.work.glob("*-disk") if any(p.rglob("*"))]
        return {
            "renders": len(ids),
            "answers": dict(served),
            "bar_met": served == Counter({"200": 4 * len(ids), "206 (range)": 4 * len(ids)}),
            "objects_in_the_bucket": len(bucket_server.keys(bucket)),
            "local_disks_holding_files": disks,
        }
    finally:
        stack.stop()
        s3.terminate()
        s3.wait(timeout=10)


def _tmpfs(folder: Path) -> bool:
    """The media folder as a tmpfs of 1 GiB (a disk that fills), when this process may
    mount one (root)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1g,mode=0777", "tmpfs", str(folder)],
        capture_output=True,
    )
    return mounted.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--renders", type=int, default=30)
    parser.add_argument("--outage", type=float, default=30.0, help="seconds PostgreSQL is down")
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="threads per worker")
    args = parser.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}: choose from {', '.join(FAULTS)}")
    work = Path(tempfile.mkdtemp(prefix="bench-render-faults-"))
    os.chmod(work, 0o755)  # PostgreSQL runs as its own user when this runs as root
    results: dict[str, object] = {
        "settings": "defaults: ADSTUDIO_RENDER_STALE_AFTER 20 s, ADSTUDIO_RECOVERY_INTERVAL 10 s",
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, {platform.node()}",
    }
    tmpfs = "storage" in faults and _tmpfs(work / "media")
    if "storage" in faults and not tmpfs:
        results["storage"] = {"skipped": "mounting a small tmpfs as the media folder needs root"}
        faults.remove("storage")
    in_one_stack = [f for f in faults if f != "hosts"]
    try:
        if in_one_stack:
            stack = Stack(args, work, {})
            try:
                stack.start(workers=args.workers, webs=1)
                for fault in in_one_stack:
                    print(f"{fault}: {args.renders} renders asked for, then the fault", flush=True)
                    results[fault] = one_fault(stack, fault, args)
                    print(f"{fault}: {json.dumps(results[fault])}", flush=True)
            finally:
                stack.stop()
        if "hosts" in faults:
            print("hosts: two web hosts and a worker host sharing an S3 bucket", flush=True)
            results["hosts"] = hosts(args, work)
            print(f"hosts: {json.dumps(results['hosts'])}", flush=True)
    finally:
        if tmpfs:
            subprocess.run(["umount", str(work / "media")], check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(f"written to {write_results('render_faults', results)}")


if __name__ == "__main__":
    main()
