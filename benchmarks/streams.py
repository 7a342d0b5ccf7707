"""Open event streams against the web server: does a person still get an answer?

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.streams [--streams 80] [--users 8] [--seconds 20]
        [--server wsgi|asgi] [--web-workers 2] [--web-threads 16] [--runs 1]

Starts the app under gunicorn (gthread, as README deploys it; ``--server wsgi``) or
uvicorn (``--server asgi``, the same number of processes) on the benchmark database,
with a broker no worker reads (``--broker-url``, DB 14) and the shared cache
(``--cache-url``, DB 13). Each of ``--users`` users has a queued run; ``--streams``
Server-Sent Event streams follow those runs (as EventSource does, ``?wait=`` long), and
while they are open a prober asks ``/healthz`` every 0.1 s and a client of its own posts
a chat message every 0.5 s, each with a 10 s timeout. Prints the p50/p95/p99 of both and
how many timed out, and the web processes' resident memory per open stream. Results
also go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks._bench_db import (
    DEFAULT_DATABASE,
    bench_database_url,
    claim_redis,
    create_database,
    empty_work_queue,
    free_port,
    machine,
    percentile,
    setup_django,
    source_revision,
    start,
    wait_http,
    web_command,
    write_results,
)

BROKER = os.environ.get("ADSTUDIO_BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
CACHE = os.environ.get("ADSTUDIO_BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")
TIMEOUT_S = 10.0


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


async def follow(client: httpx.AsyncClient, url: str, token: str, opened: list) -> None:
    """One EventSource: keep the stream open, reading what comes."""
    headers = {"Authorization": f"Token {token}", "Accept": "text/event-stream"}
    try:
        async with client.stream("GET", url, headers=headers) as response:
            opened.append(response.status_code)
            async for _chunk in response.aiter_bytes():
                pass
    except httpx.HTTPError:
        opened.append("error")


async def probe(client: httpx.AsyncClient, call, every: float, until: float) -> dict:
    took, timeouts, errors = [], 0, 0
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            response = await call(client)
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


async def one_run(base: str, streams: list[tuple[str, str]], chat: tuple[str, str], seconds: float,
                  session: int) -> dict:  # fmt: skip
    limits = httpx.Limits(max_connections=len(streams) + 10, max_keepalive_connections=0)
    timeout = httpx.Timeout(TIMEOUT_S, read=None)
    async with (
        httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as followers,
        httpx.AsyncClient(base_url=base, timeout=TIMEOUT_S) as prober,
    ):
        before = resident_kib(session)
        opened: list = []
        tasks = [
            asyncio.create_task(follow(followers, url, token, opened)) for url, token in streams
        ]
        connecting = time.monotonic() + TIMEOUT_S
        while len(opened) < len(streams) and time.monotonic() < connecting:
            await asyncio.sleep(0.1)  # the streams connect (those the server answers)
        during = resident_kib(session)
        until = time.monotonic() + seconds
        token, ad = chat

        async def healthz(client):
            return await client.get("/healthz")

        async def post(client):
            return await client.post(
                f"/api/ads/{ad}/chat",
                json={"message": "Make the music more upbeat"},
                headers={"Authorization": f"Token {token}"},
            )

        health, chats = await asyncio.gather(
            probe(prober, healthz, 0.1, until), probe(prober, post, 0.5, until)
        )
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "streams_open": sum(1 for status in opened if status == 200),
        "streams_refused_or_failed": sum(1 for status in opened if status != 200),
        "healthz": health,
        "chat_post": chats,
        "memory_kib_per_stream": round((during - before) / max(1, len(streams)), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=80)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--server", choices=["wsgi", "asgi"], default="wsgi")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--broker-url", default=BROKER)
    parser.add_argument("--cache-url", default=CACHE)
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    args = parser.parse_args()
    url = bench_database_url(args.database)
    create_database(url)
    # Before settings load: the runs made here are queued to a broker no worker reads.
    os.environ["CELERY_BROKER_URL"] = args.broker_url
    setup_django(url)
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from conversations.services import start_generation
    from drafts.services import ad_create

    empty_work_queue(args.broker_url)
    claim_redis(args.cache_url)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": args.broker_url,
        "CACHE_URL": args.cache_url,
        "ADSTUDIO_RUN_RATE": "1000000/minute",
        "ADSTUDIO_MAX_STREAMS_PER_USER": str(args.streams + 10),
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    streams = []
    for n in range(args.users):
        user = User.objects.create(username=f"streams-{time.time_ns()}-{n}")
        token = Token.objects.create(user=user).key
        ad = ad_create(owner=user, title="streams", client="Spotify", language="th")
        run = start_generation(ad=ad)
        wait = 3 * args.seconds
        streams += [(f"/api/runs/{run.pk}/events/stream?wait={min(60, wait):.0f}", token)] * (
            args.streams // args.users
        )
    chatter = User.objects.create(username=f"streams-chat-{time.time_ns()}")
    chat = (
        Token.objects.create(user=chatter).key,
        str(ad_create(owner=chatter, title="chat", client="Spotify", language="th").pk),
    )
    port = free_port()
    results = []
    with tempfile.TemporaryDirectory() as logs:
        if args.server == "asgi":
            command = [
                str(Path(sys.executable).parent / "uvicorn"),
                "adstudio.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(args.web_workers),
                "--log-level",
                "warning",
            ]
        else:
            command = web_command(port, workers=args.web_workers, threads=args.web_threads)
        web = start(command, env, Path(logs) / "web.log")
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(f"{base}/healthz")
            for _ in range(args.runs):
                results.append(asyncio.run(one_run(base, streams, chat, args.seconds, web.pid)))
                print(results[-1])
        finally:
            os.killpg(web.pid, 15)
            web.wait(timeout=30)
    summary = {
        "server": (
            f"uvicorn, {args.web_workers} processes"
            if args.server == "asgi"
            else f"gunicorn gthread, {args.web_workers} x {args.web_threads} threads"
        ),
        "streams": args.streams,
        "users": args.users,
        "seconds": args.seconds,
        "runs": results,
        "median_healthz_p99_ms": statistics.median(
            r["healthz"].get("p99_ms", float("inf")) for r in results
        ),
        "revision": source_revision(),
        "machine": machine(),
    }
    print(f"results: {write_results('streams', summary)}")


if __name__ == "__main__":
    main()
