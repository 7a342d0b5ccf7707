"""The API under load: 50 web clients chatting for 30 s.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.api_load [--clients 50] [--seconds 30] [--runs 3]
        [--think S] [--flood] [--warmup S] [--server asgi|wsgi]

Starts the app under gunicorn (uvicorn's ASGI workers, as README deploys it; ``--server
wsgi``: the threaded WSGI workers deployed before them) and a Celery worker (threads)
answering with the offline demo director, on a benchmark database and two Redis
databases of its own, the broker and the throttle's cache (``--broker-url``,
``--cache-url``; by default DBs 14 and 13; each is emptied first, and refused if it holds
keys no benchmark wrote), as README deploys them. Each client, as the web client does, posts a
chat message to its own ad (the enqueue), follows the run's events (long polling) until
the run has finished, reads the run back and posts the next message, at once or after
``--think`` seconds. With ``--flood`` a client posts again as soon as it has read the run
back, finished or not: runs pile up behind one another, which measures the machine's
capacity rather than a chat. The clients first run ``--warmup`` seconds unmeasured, as a
server in service has long since filled its connection pools and caches and imported
what its requests need. Prints requests/s and p50/p95/p99 of the POST and the GET
run (medians over ``--runs``), the time from a post to its run's end, and the errors.
Results also go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from benchmarks._bench_db import (
    CpuSteal,
    bench_database_url,
    claim_redis,
    commit_latency,
    commit_latency_report,
    create_database,
    database_cpu_seconds,
    empty_work_queue,
    free_port,
    machine,
    percentile,
    process_cpu_seconds,
    setup_django,
    start,
    wait_http,
    web_command,
    write_results,
)
from testbed.worker import worker_command

BROKER = os.environ.get("ADSTUDIO_BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
# The throttle's counts, shared by the web processes.
CACHE = os.environ.get("ADSTUDIO_BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")


def one_run(
    base: str,
    tokens: list[tuple[str, str]],
    seconds: float,
    think: float,
    flood: bool,
    cpu_of: dict[str, Callable[[], float]],
) -> dict:
    """All clients in one event loop: the load generator itself stays light. With
    ``think`` > 0 each client pauses that long after reading its run back, as a person
    reading the reply does. ``cpu_of`` gives each part's CPU seconds so far: what a chat
    message costs each of them is the capacity's measure, which queueing does not blur."""
    posts: list[float] = []
    gets: list[float] = []
    replies: list[float] = []  # from the post to the run's end, as the client saw it
    errors: dict[str, int] = {}
    event_polls = 0

    async def follow(http: httpx.AsyncClient, headers: dict, run_id: str) -> None:
        nonlocal event_polls
        after = 0
        while True:
            event_polls += 1
            page = await http.get(
                f"/api/runs/{run_id}/events", params={"after": after, "wait": 10}, headers=headers
            )
            if page.status_code != 200:
                raise RuntimeError(f"GET events {page.status_code}")
            body = page.json()
            after = body["lastSeq"]
            if body["runStatus"] not in ("queued", "running"):
                return

    async def client(http: httpx.AsyncClient, token: str, ad_id: str, stop_at: float) -> None:
        headers = {"Authorization": f"Token {token}"}
        rng = random.Random(token)
        if think:  # arrive spread over one pause, not all at once
            await asyncio.sleep(think * rng.random())
        n = 0
        while time.monotonic() < stop_at:
            n += 1
            try:
                started = time.perf_counter()
                posted = await http.post(
                    f"/api/ads/{ad_id}/chat", json={"message": f"take {n}"}, headers=headers
                )
                post_s = time.perf_counter() - started
                if posted.status_code != 202:
                    raise RuntimeError(f"POST {posted.status_code}")
                run_id = posted.json()["runId"]
                if not flood:
                    await follow(http, headers, run_id)
                    reply_s = time.perf_counter() - started
                started = time.perf_counter()
                got = await http.get(f"/api/runs/{run_id}", headers=headers)
                get_s = time.perf_counter() - started
                if got.status_code != 200:
                    raise RuntimeError(f"GET {got.status_code}")
                if not flood and got.json()["status"] != "succeeded":
                    raise RuntimeError(f"run {got.json()['status']}")
            except (httpx.HTTPError, RuntimeError) as exc:
                key = str(exc)[:60] or type(exc).__name__
                errors[key] = errors.get(key, 0) + 1
                continue
            posts.append(post_s * 1000)
            gets.append(get_s * 1000)
            if not flood:
                replies.append(reply_s * 1000)
            if think:  # people don't act in step: 0.5x to 1.5x the mean pause
                await asyncio.sleep(think * rng.uniform(0.5, 1.5))

    async def all_clients() -> float:
        # One HTTP client and connection per web client, as each browser has its own: in
        # one shared pool, httpx checks every idle connection on every request, and with
        # 50 of them that cost the load generator most of a core the app needs.
        async with contextlib.AsyncExitStack() as stack:
            https = [
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        base_url=base, timeout=30, limits=httpx.Limits(max_connections=1)
                    )
                )
                for _ in tokens
            ]
            started = time.monotonic()
            stop_at = started + seconds
            await asyncio.gather(
                *(client(http, t, a, stop_at) for http, (t, a) in zip(https, tokens, strict=True))
            )
            return time.monotonic() - started

    cpu_before = {part: seconds_of() for part, seconds_of in cpu_of.items()}
    elapsed = asyncio.run(all_clients())
    cpu_s = {part: seconds_of() - cpu_before[part] for part, seconds_of in cpu_of.items()}
    requests = len(posts) + len(gets) + event_polls
    quantiles = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
    return {
        "requests_per_s": requests / elapsed,
        "event_polls": event_polls,
        "post_ms": {q: percentile(posts, f) for q, f in quantiles},
        "get_ms": {q: percentile(gets, f) for q, f in quantiles},
        "reply_ms": {q: percentile(replies, f) for q, f in quantiles} if replies else None,
        "posts": len(posts),
        "cpu_ms_per_message": {
            part: seconds * 1000 / max(len(posts), 1) for part, seconds in cpu_s.items()
        },
        "web_cpu_ms_per_request": cpu_s["web"] * 1000 / max(requests, 1),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--server", choices=["asgi", "wsgi"], default="asgi")
    parser.add_argument(
        "--web-threads",
        type=int,
        help="threads per WSGI web process; by default one per client: "
        "every client may be following a run, and keep-alive connections need not spread "
        "evenly over the processes",
    )
    parser.add_argument(
        "--think", type=float, default=0.0, help="seconds a client pauses between messages"
    )
    parser.add_argument(
        "--flood",
        action="store_true",
        help="post again without waiting for the run to finish (the machine's capacity)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=5.0,
        help="seconds the clients run before the measured runs, unmeasured",
    )
    parser.add_argument(
        "--worker-nice",
        type=int,
        default=0,
        help="niceness of the Celery worker: above 0, the web gets the CPU first",
    )
    parser.add_argument(
        "--broker-url", default=BROKER, help="an empty Redis database (ADSTUDIO_BENCH_BROKER_URL)"
    )
    parser.add_argument(
        "--cache-url", default=CACHE, help="an empty Redis database (ADSTUDIO_BENCH_CACHE_URL)"
    )
    args = parser.parse_args()
    if args.broker_url == args.cache_url:
        sys.exit("--broker-url and --cache-url must be different Redis databases.")
    url = bench_database_url()
    create_database(url)
    setup_django(url)
    logging.getLogger().setLevel(logging.WARNING)  # no per-request client logging

    from django.contrib.auth.models import User

    from accounts.services import token_create
    from drafts.services import ad_create
    from voices.models import Voice

    if not Voice.objects.filter(language="th", approved=True).exists():
        sys.exit("No approved Thai voices: run `python -m benchmarks.voice_search` once first.")
    pairs = []
    for n in range(args.clients):
        user, _ = User.objects.get_or_create(username=f"load{n}")
        _, token = token_create(user=user)
        ad = ad_create(
            owner=user,
            title="load",
            client="Spotify Premium family plan",
            language="th",
            duration_s=30,
        )
        pairs.append((token, str(ad.pk)))
    empty_work_queue(args.broker_url)
    claim_redis(args.cache_url)

    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": args.broker_url,
        "CACHE_URL": args.cache_url,
        "ADSTUDIO_RUN_RATE": "1000000/minute",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    for key in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)  # the offline demo director answers
    with tempfile.TemporaryDirectory() as logs:
        web = start(
            web_command(
                port,
                workers=args.web_workers,
                threads=args.web_threads or args.clients,
                asgi=args.server == "asgi",
                # Longer than the clients' pauses: a connection closed by the server just
                # as a client reuses it is a ReadError that measures nothing of ours.
                extra=("--keep-alive", "75"),
            ),
            env,
            Path(logs) / "web.log",
        )
        nice = ["nice", "-n", str(args.worker_nice)] if args.worker_nice else []
        worker = start(
            [*nice, *worker_command(concurrency=8, loglevel="WARNING")],
            env,
            Path(logs) / "worker.log",
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/api/schema/")
            cpu_of = {
                "web": lambda: process_cpu_seconds(session=web.pid),
                "worker": lambda: process_cpu_seconds(session=worker.pid),
                # the benchmark database's own backends, not every postgres here
                "postgres": lambda: database_cpu_seconds(url),
                "load generator": time.process_time,
            }
            base = f"http://127.0.0.1:{port}"
            if args.warmup:
                one_run(base, pairs, args.warmup, args.think, args.flood, cpu_of)
            disk_before = commit_latency(url)
            with CpuSteal() as steal:
                results = [
                    one_run(
                        base,
                        pairs,
                        args.seconds,
                        args.think,
                        args.flood,
                        cpu_of,
                    )
                    for _ in range(args.runs)
                ]
            disk_after = commit_latency(url)
        finally:
            for process in (web, worker):
                os.killpg(process.pid, 15)
                process.wait(timeout=30)
    summary = {
        "server": args.server,
        "clients": args.clients,
        "seconds": args.seconds,
        "think_s": args.think,
        "warmup_s": args.warmup,
        "flood": args.flood,
        "runs": results,
        "median": {
            "requests_per_s": statistics.median(r["requests_per_s"] for r in results),
            "web_cpu_ms_per_request": statistics.median(
                r["web_cpu_ms_per_request"] for r in results
            ),
            "cpu_ms_per_message": {
                part: statistics.median(r["cpu_ms_per_message"][part] for r in results)
                for part in results[0]["cpu_ms_per_message"]
            },
            **{
                f"{kind}_{q}": statistics.median(r[f"{kind}_ms"][q] for r in results)
                for kind in ("post", "get")
                for q in ("p50", "p95", "p99")
            },
            **(
                {}
                if args.flood
                else {
                    f"reply_{q}": statistics.median(r["reply_ms"][q] for r in results)
                    for q in ("p50", "p95", "p99")
                }
            ),
        },
        "errors": sum(sum(r["errors"].values()) for r in results),
        "machine": machine(),
        "cpu_steal_percent": steal.percent,
        "commit_latency_ms": {"before": disk_before, "after": disk_after},
        "cpu_reference_loop_ms": steal.reference_ms,
    }
    m = summary["median"]
    print(
        f"api_load: {args.clients} clients x {args.seconds:.0f} s "
        f"(after {args.warmup:.0f} s of warm-up), think {args.think} s, "
        f"{'flood (runs pile up)' if args.flood else 'each following its run'}, "
        f"{args.runs} runs (medians)"
    )
    print(f"  chat messages/s {statistics.median(r['posts'] for r in results) / args.seconds:.1f}")
    print(f"  requests/s {m['requests_per_s']:.0f}")
    print(
        f"  POST chat (enqueue) p50 {m['post_p50']:.1f}  p95 {m['post_p95']:.1f}  "
        f"p99 {m['post_p99']:.1f} ms   (target p95 < 50)"
    )
    print(
        f"  GET run            p50 {m['get_p50']:.1f}  p95 {m['get_p95']:.1f}  "
        f"p99 {m['get_p99']:.1f} ms"
    )
    if not args.flood:
        print(
            f"  post to run's end p50 {m['reply_p50']:.1f}  p95 {m['reply_p95']:.1f}  "
            f"p99 {m['reply_p99']:.1f} ms   (events long polling)"
        )
    cpu = ", ".join(f"{part} {ms:.1f}" for part, ms in m["cpu_ms_per_message"].items())
    print(f"  CPU per chat message (ms): {cpu}; web per request {m['web_cpu_ms_per_request']:.1f}")
    print(steal.report())
    print(commit_latency_report(disk_before, disk_after))
    print(f"  errors {summary['errors']}: {[r['errors'] for r in results]}")
    print(f"results: {write_results('api_load', summary)}")


if __name__ == "__main__":
    main()
