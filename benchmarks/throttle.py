"""The run rate limit under concurrency, across web processes: one user's parallel chats.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.throttle [--requests 100] [--rate 30/minute]
        [--web-workers 2] [--runs 3] [--database NAME]

Starts the app under gunicorn (gthread, ``--web-workers`` processes) on the benchmark
database, with the rate limit's Redis (``--cache-url``, by default DB 13) and a broker
(``--broker-url``, DB 14) that no worker reads: the accepted runs stay queued. Each run
makes a new user and ad and sends ``--requests`` chat messages to it at once, over as
many connections; it counts the 202s and 429s. At a limit of N per period, exactly N are
accepted however the requests fall on the processes. Results also go to
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
import time
from collections import Counter
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
    setup_django,
    start,
    wait_http,
    web_command,
    write_results,
)

BROKER = os.environ.get("ADSTUDIO_BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
CACHE = os.environ.get("ADSTUDIO_BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")


async def burst(base: str, token: str, ad_id: str, requests: int) -> Counter:
    limits = httpx.Limits(max_connections=requests, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        headers = {"Authorization": f"Token {token}"}
        answers = await asyncio.gather(
            *(
                client.post(
                    f"/api/ads/{ad_id}/chat", json={"message": f"take {n}"}, headers=headers
                )
                for n in range(requests)
            )
        )
    return Counter(response.status_code for response in answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rate", default="30/minute")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--broker-url", default=BROKER)
    parser.add_argument("--cache-url", default=CACHE)
    parser.add_argument(
        "--database",
        default=DEFAULT_DATABASE,
        help="the benchmark database's name (another for another commit's schema)",
    )
    args = parser.parse_args()
    url = bench_database_url(args.database)
    create_database(url)
    setup_django(url)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request

    from django.contrib.auth.models import User

    from accounts.services import token_create
    from drafts.services import ad_create

    empty_work_queue(args.broker_url)
    claim_redis(args.cache_url)
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": args.broker_url,
        "CACHE_URL": args.cache_url,
        "ADSTUDIO_RUN_RATE": args.rate,
        "ADSTUDIO_MAX_STREAMS_PER_USER": "1000",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    results = []
    with tempfile.TemporaryDirectory() as logs:
        threads = max(8, args.requests // args.web_workers + 1)
        web = start(
            web_command(port, workers=args.web_workers, threads=threads),
            env,
            Path(logs) / "web.log",
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(f"{base}/healthz")
            for _ in range(args.runs):
                user = User.objects.create(username=f"throttle-{time.time_ns()}")
                token = token_create(user=user)[1]
                ad = ad_create(owner=user, title="throttle", client="Spotify", language="th")
                counts = asyncio.run(burst(base, token, str(ad.pk), args.requests))
                results.append({"accepted": counts.get(202, 0), "refused": counts.get(429, 0),
                                "other": {str(k): v for k, v in counts.items()
                                          if k not in (202, 429)}})  # fmt: skip
                print(f"run: {results[-1]}")
        finally:
            os.killpg(web.pid, 15)
            web.wait(timeout=30)
    summary = {
        "requests": args.requests,
        "rate": args.rate,
        "web_workers": args.web_workers,
        "runs": results,
        "machine": machine(),
    }
    print(f"results: {write_results('throttle', summary)}")


if __name__ == "__main__":
    main()
