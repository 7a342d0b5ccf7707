"""Open event streams and slow clients against the web server: does a person still get an
answer, and does every stream get every event?

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.streams [--streams 1000] [--users 100] [--seconds 20]
        [--server asgi|wsgi] [--web-workers 2] [--web-threads 16] [--runs 1]
        [--slowloris 0] [--idle]

Starts the app as README deploys it (gunicorn with uvicorn's ASGI workers; ``--server
wsgi``: its threaded WSGI workers, deployed before them) on the benchmark database, with
the shared cache (``--cache-url``) and a broker of its own (``--broker-url``). Each of
``--users`` users has a run, followed by ``--streams / --users`` Server-Sent Event streams
(as EventSource opens them). Once they are open a Celery worker starts and runs them
against a local OpenAI-compatible server that answers as a creative director does, each
reply after 1-2 s (``--idle``: no worker, the streams only wait); the worker runs
under ``nice -n 10``, as README starts one on a host it shares with the web processes.
Meanwhile a prober of its own process asks ``/healthz`` every 0.1 s and posts a chat
message every 0.5 s, for ``--seconds``, each with a 10 s timeout. ``--slowloris N`` first
opens N connections that send half a request and stop (half of them in the headers, half
in the body).

Prints the p50/p95/p99 of both probes and how many timed out, each stream refused or
failed by its reason (the status and the API's error code, or the exception), the web
processes' resident memory per open stream, and whether every stream received every event
of its run, in order, up to ``run.finished``. Results also go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import socket
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from benchmarks._bench_db import (
    DEFAULT_DATABASE,
    bench_django,
    claim_redis,
    database_cpu_seconds,
    empty_work_queue,
    free_port,
    machine,
    percentile,
    process_cpu_seconds,
    source_revision,
    start,
    wait_http,
    web_command,
    write_results,
)

BROKER = os.environ.get("ADSTUDIO_BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
CACHE = os.environ.get("ADSTUDIO_BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")
TIMEOUT_S = 10.0
LATENCY_S = (1.0, 2.0)  # the provider's reply time, per model call
SAMPLE_CATALOGUE = Path(__file__).resolve().parent.parent / "voices/fixtures/sample_catalogue.json"


def resident_kib(session: int) -> int:
    """Resident memory of the processes of ``session`` (a process ``start`` started)."""
    total = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            stat = (status.parent / "stat").read_text()
            if int(stat[stat.rindex(")") + 2 :].split()[3]) != session:
                continue
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total


def refusal_reason(status: int, body: bytes) -> str:
    """ "429 too_many_streams": a refusal's status and the API's error code (the first
    words of the body when it is not the API's error shape)."""
    try:
        code = json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = " ".join(body.decode("utf-8", "replace").split())[:80] or "(empty body)"
    return f"{status} {code}"


class Follower:
    """One EventSource on a run: what it received, and whether that was the whole run in
    order (it reconnects with ``Last-Event-ID`` when the server ends the stream early)."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.status: int | str | None = None
        self.refusal = ""  # why it was not served: status and error code, or the exception
        self.seqs: list[int] = []
        self.finished = False

    async def follow(self, client: httpx.AsyncClient, opened: asyncio.Event) -> None:
        headers = {"Authorization": f"Token {self.token}", "Accept": "text/event-stream"}
        try:
            while not self.finished:
                if self.seqs:
                    headers["Last-Event-ID"] = str(self.seqs[-1])
                async with client.stream("GET", self.url, headers=headers) as response:
                    if self.status is None:
                        self.status = response.status_code
                        opened.set()
                    if response.status_code != 200:
                        self.refusal = refusal_reason(response.status_code, await response.aread())
                        return
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            self.seqs.append(int(line[4:]))
                        elif line == "event: run.finished":
                            self.finished = True
        except httpx.HTTPError as exc:
            if self.status is None:
                self.status = type(exc).__name__
                self.refusal = f"{type(exc).__name__}: {exc}"[:200]
                opened.set()

    @property
    def complete(self) -> bool:
        return self.finished and self.seqs == list(range(1, len(self.seqs) + 1))


def probe_process(base: str, chat: tuple[str, str], seconds: float, results) -> None:
    """The prober, in a process of its own: its timings are the server's, not those of a
    client busy with a thousand streams."""
    results.put(asyncio.run(_probe_all(base, chat, seconds)))


async def _probe_all(base: str, chat: tuple[str, str], seconds: float) -> dict:
    until = time.monotonic() + seconds
    token, ad = chat
    async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT_S) as client:

        async def healthz():
            return await client.get("/healthz")

        async def post():
            return await client.post(
                f"/api/ads/{ad}/chat",
                json={"message": "Make the music more upbeat"},
                headers={"Authorization": f"Token {token}"},
            )

        health, chats = await asyncio.gather(_probe(healthz, 0.1, until), _probe(post, 0.5, until))
    return {"healthz": health, "chat_post": chats}


async def _probe(call, every: float, until: float) -> dict:
    took, timeouts, errors = [], 0, 0
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            response = await call()
            if response.status_code >= 400:
                errors += 1
            else:
                took.append((time.monotonic() - started) * 1000)
        except httpx.TimeoutException:
            timeouts += 1
        except httpx.HTTPError:
            errors += 1
        await asyncio.sleep(max(0.0, every - (time.monotonic() - started)))
    return {
        "answered": len(took),
        "timeouts": timeouts,
        "errors": errors,
        **({f"p{q}_ms": round(percentile(took, q / 100), 1) for q in (50, 95, 99)} if took else {}),
    }


def half_sent(port: int, n: int, token: str) -> list[socket.socket]:
    """``n`` connections that send half a request and stop: half stop in the headers, half
    in a chat POST's body."""
    body = b'{"message": "Make the music more upbeat"}'
    heads = b"GET /api/ads/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n"
    posts = (
        b"POST /api/ads/00000000-0000-0000-0000-000000000000/chat HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Authorization: Token " + token.encode() + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:5]
    )
    held = []
    for i in range(n):
        connection = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        connection.sendall(heads if i % 2 == 0 else posts)
        held.append(connection)
    return held


async def _warm_up(client: httpx.AsyncClient, followers: list[Follower], processes: int) -> None:
    """Open and close a few streams in each web process first: the memory measured per
    stream is then the streams', not what a process loads for its first requests."""
    sample = followers[: 10 * processes]
    headers = [{"Authorization": f"Token {f.token}", "Accept": "text/event-stream"} for f in sample]

    async def opened_once(follower: Follower, header: dict) -> None:
        url = follower.url.replace("wait=60", "wait=1")  # it ends after a second
        async with client.stream("GET", url, headers=header) as response:
            await response.aread()

    await asyncio.gather(*(opened_once(f, h) for f, h in zip(sample, headers, strict=True)))


async def one_run(base: str, followers: list[Follower], chat: tuple[str, str], args,
                  session: int, start_worker) -> dict:  # fmt: skip
    limits = httpx.Limits(max_connections=len(followers) + 10, max_keepalive_connections=0)
    timeout = httpx.Timeout(TIMEOUT_S, read=None)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as client:
        await _warm_up(client, followers, args.web_workers)
        before = resident_kib(session)
        opened = [asyncio.Event() for _ in followers]
        tasks = [
            asyncio.create_task(f.follow(client, event))
            for f, event in zip(followers, opened, strict=True)
        ]
        if opened:
            await asyncio.wait(
                [asyncio.create_task(event.wait()) for event in opened], timeout=TIMEOUT_S
            )  # the streams connect (those the server answers)
        during = resident_kib(session)
        worker = start_worker() if start_worker else None
        cpu_before = {"web": process_cpu_seconds(session=session), "client": time.process_time()}
        # The benchmark database's own server processes, not every postgres on the machine.
        cpu_before["postgres"] = database_cpu_seconds(args.database_url)
        window = time.monotonic()
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        prober = context.Process(target=probe_process, args=(base, chat, args.seconds, results))
        prober.start()
        probes = await asyncio.to_thread(results.get, timeout=args.seconds + 4 * TIMEOUT_S)
        prober.join()
        window = time.monotonic() - window
        cpu = {
            "web": process_cpu_seconds(session=session) - cpu_before["web"],
            "postgres": database_cpu_seconds(args.database_url) - cpu_before["postgres"],
            "client (streams, provider)": time.process_time() - cpu_before["client"],
        }
        if worker is not None:
            cpu["worker"] = process_cpu_seconds(session=worker.pid)  # it started in the window
        if worker is not None and tasks:  # the runs end; the streams follow them to the end
            await asyncio.wait(tasks, timeout=60)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if worker is not None:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)
    return {
        "streams_open": sum(1 for f in followers if f.status == 200),
        "streams_refused_or_failed": sum(1 for f in followers if f.status != 200),
        # Each refusal or failure by its reason, so a run that lost streams says why.
        "refusals": dict(Counter(f.refusal for f in followers if f.status != 200)),
        **probes,
        "memory_kib_per_stream": round((during - before) / max(1, len(followers)), 1),
        # Cores busy during the probes' window, by whom (the machine has os.cpu_count()).
        "cores_busy": {who: round(seconds / window, 2) for who, seconds in cpu.items()},
        **(
            {
                "streams_complete_in_order": sum(1 for f in followers if f.complete),
                "events_received": sum(len(f.seqs) for f in followers),
            }
            if worker is not None
            else {}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--server", choices=["asgi", "wsgi"], default="asgi")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=16, help="per WSGI web process")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--slowloris", type=int, default=0, help="half-sent requests held")
    parser.add_argument("--idle", action="store_true", help="no worker: the runs stay queued")
    parser.add_argument("--worker-nice", type=int, default=10, help="0: the worker not niced")
    parser.add_argument("--broker-url", default=BROKER)
    parser.add_argument("--cache-url", default=CACHE)
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    args = parser.parse_args()
    url = bench_django(args.database, broker_url=args.broker_url)
    args.database_url = url
    logging.getLogger().setLevel(logging.WARNING)

    from django.contrib.auth.models import User
    from django.core.management import call_command

    from accounts.services import token_create
    from benchmarks.soak import Director, SoakProvider
    from conversations.run_request import RunRequest
    from conversations.services import brief_send
    from drafts.services import ad_create
    from testbed.fake_openai import TEST_API_KEY
    from testbed.worker import worker_command
    from voices.models import Voice

    if not Voice.objects.filter(approved=True, active=True).exists():
        call_command(
            "import_voices", str(SAMPLE_CATALOGUE), "--provider", "sample", "--approve", verbosity=0
        )
    claim_redis(args.cache_url)
    provider = SoakProvider(host="127.0.0.1").start()
    provider.responder = Director(seed=1, latency=LATENCY_S, r429=0, r500=0)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": args.broker_url,
        "CACHE_URL": args.cache_url,
        "ADSTUDIO_RUN_RATE": "1000000/minute",
        "ADSTUDIO_MAX_STREAMS_PER_USER": str(max(20, args.streams // max(1, args.users) + 10)),
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "OPENAI_API_KEY": TEST_API_KEY,
        "OPENAI_BASE_URL": provider.base_url,
        "ADSTUDIO_OPENAI_MODEL": "gpt-4.1-mini",
        "ADSTUDIO_PROVIDER_ROUTES": "default=openai",
        "ADSTUDIO_PROVIDER_FALLBACKS": "",
    }
    chatter = User.objects.create(username=f"streams-chat-{time.time_ns()}")
    chat = (
        token_create(user=chatter)[1],
        str(ad_create(owner=chatter, title="chat", client="Spotify", language="th").pk),
    )
    port = free_port()
    results = []
    with tempfile.TemporaryDirectory() as logs:
        web = start(
            web_command(
                port,
                workers=args.web_workers,
                threads=args.web_threads,
                asgi=args.server == "asgi",
            ),
            env,
            Path(logs) / "web.log",
        )

        workers = []  # each stopped by one_run, and here whatever happened

        def start_worker():
            # As README starts a worker on a host it shares with the web processes.
            nice = ["nice", "-n", str(args.worker_nice)] if args.worker_nice else []
            workers.append(
                start(
                    [
                        *nice,
                        *worker_command(concurrency=max(16, args.users + 8), loglevel="WARNING"),
                    ],
                    {**env, "ADSTUDIO_DB_POOL_MAX_SIZE": "12"},
                    Path(logs) / "worker.log",
                )
            )
            return workers[-1]

        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(f"{base}/healthz")
            for _ in range(args.runs):
                empty_work_queue(args.broker_url)  # each measured run's runs are new
                followers = []
                for n in range(args.users):
                    user = User.objects.create(username=f"streams-{time.time_ns()}-{n}")
                    token = token_create(user=user)[1]
                    ad = ad_create(owner=user, title="streams", client="Spotify", language="th")
                    run = brief_send(request=RunRequest(ad=ad))
                    stream = f"/api/runs/{run.pk}/events/stream?wait=60"
                    followers += [
                        Follower(stream, token) for _ in range(args.streams // args.users)
                    ]
                held = half_sent(port, args.slowloris, chat[0]) if args.slowloris else []
                try:
                    results.append(
                        asyncio.run(
                            one_run(
                                base,
                                followers,
                                chat,
                                args,
                                web.pid,
                                None if args.idle else start_worker,
                            )
                        )
                    )
                finally:
                    for connection in held:
                        connection.close()
                print(json.dumps(results[-1]))
        finally:
            for process in (*workers, web):
                if process.poll() is None:
                    os.killpg(process.pid, 15)
                    process.wait(timeout=30)
            provider.stop()
    summary = {
        "server": (
            f"gunicorn + uvicorn workers, {args.web_workers} processes"
            if args.server == "asgi"
            else f"gunicorn gthread, {args.web_workers} x {args.web_threads} threads"
        ),
        "streams": args.streams,
        "users": args.users,
        "seconds": args.seconds,
        "slowloris": args.slowloris,
        "live_runs": not args.idle,
        "runs": results,
        "median_healthz_p99_ms": statistics.median(
            r["healthz"].get("p99_ms", float("inf")) for r in results
        ),
        "median_chat_post_p95_ms": statistics.median(
            r["chat_post"].get("p95_ms", float("inf")) for r in results
        ),
        "revision": source_revision(),
        "machine": machine(),
    }
    print(f"results: {write_results('streams', summary)}")


if __name__ == "__main__":
    main()
