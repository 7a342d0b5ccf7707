"""The chat POST's own cost in one process: what the web process spends per message.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.chat_post [--posts 200] [--profile]

Posts ``--posts`` chat messages through Django's test client: the whole middleware
stack, authentication by token, the throttle (its counts in Redis), DRF's parsing and
validation, the ad's latest conversation read, the run's row written, and the run's task
published to the broker (Redis, ``--broker-url``, emptied first and refused if it holds
keys no benchmark wrote). Not included: the HTTP server's parsing and the socket, which
``benchmarks.api_load`` measures with the rest; then the round trips of a POST,
statements to PostgreSQL and requests to Redis, counted over 50 more POSTs. The messages
go to ``--ads`` ads in turn, each its own user's, each with its conversation started by
its first message, as the 50 clients of ``api_load`` post to their 50 ads; no worker
runs them, so they stay queued. The throttle's window is a second (``1000000/second``),
so each user's history holds one or two posts however fast the process runs. Prints
milliseconds per POST (median of ``--rounds`` rounds); ``--profile`` prints cProfile's
top functions instead.

The count of CPU instructions per POST, which does not move with the machine: the module
run under callgrind for two numbers of posts, the difference divided by theirs
(docs/benchmarks/HISTORY.md, "API under load", gives the command).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

from benchmarks._bench_db import (
    bench_database_url,
    claim_redis,
    create_database,
    empty_work_queue,
    setup_django,
)
from benchmarks.api_load import BROKER, CACHE  # the same Redis databases by default


def prepare(ads: int, broker: str, cache: str):
    """Django on the benchmark database, ``ads`` users each with an ad and its
    conversation (its first message posted), and a function that posts the next message,
    to the next ad, as its owner."""
    # as benchmarks.api_load configures its web processes, but for the throttle's window
    os.environ.update(
        CELERY_BROKER_URL=broker,
        CACHE_URL=cache,
        ADSTUDIO_RUN_RATE="1000000/second",
        LOG_LEVEL="WARNING",
        ALLOWED_HOSTS="127.0.0.1,localhost",
    )
    for key in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "ANTHROPIC_API_KEY"):
        os.environ.pop(key, None)
    url = bench_database_url()
    create_database(url)
    claim_redis(broker)
    claim_redis(cache)
    setup_django(url)
    empty_work_queue(broker)

    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    from accounts.services import token_create
    from drafts.services import ad_create

    # One client per user and ad, as api_load's clients: each user's throttle history
    # then holds the few posts of the last second, however fast the process runs (under
    # callgrind or not), so a count does not depend on the speed it was taken at.
    clients = []
    for n in range(ads):
        user = User.objects.create(username=f"bench-chat-{os.getpid()}-{n}")
        _, token = token_create(user=user)
        ad = ad_create(owner=user, title="bench", client="Spotify", language="th", duration_s=30)
        client = APIClient(SERVER_NAME="127.0.0.1")
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        clients.append((client, f"/api/ads/{ad.pk}/chat"))
    turns = itertools.cycle(clients)

    def post() -> None:
        client, path = next(turns)
        response = client.post(path, {"message": "Make the music more upbeat."}, format="json")
        if response.status_code != 202:
            raise SystemExit(f"chat POST answered {response.status_code}: {response.content!r}")

    for _ in range(ads):  # each ad's first message starts its conversation
        post()
    return post


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=200, help="POSTs per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ads", type=int, default=50, help="ads posted to in turn")
    parser.add_argument("--warmup", type=int, default=50, help="POSTs before the timing")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-out", help="with --profile: write the stats to this file")
    parser.add_argument("--broker-url", default=BROKER)
    parser.add_argument("--cache-url", default=CACHE)
    args = parser.parse_args()
    rounds = 1 if args.profile else args.rounds
    post = prepare(args.ads, args.broker_url, args.cache_url)
    for _ in range(args.warmup):
        post()
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.posts):
            post()
        profiler.disable()
        if args.profile_out:
            profiler.dump_stats(args.profile_out)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        return
    per_post = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(args.posts):
            post()
        per_post.append((time.perf_counter() - started) * 1000 / args.posts)
    print(
        f"chat POST in process: {statistics.median(per_post):.2f} ms per POST "
        f"(median of {rounds} rounds of {args.posts}: "
        + " / ".join(f"{ms:.2f}" for ms in per_post)
        + ")"
    )
    statements, redis_trips = round_trips(post, ROUND_TRIP_POSTS)
    print(
        f"round trips per POST: PostgreSQL {statements:.1f} statements, "
        f"Redis {redis_trips:.1f} requests (a pipeline counted once; no idempotency key sent)"
    )


# A fixed number, not ``--posts``: the instructions per POST are the difference between two
# numbers of posts, which the POSTs counted here must not be part of.
ROUND_TRIP_POSTS = 50


def round_trips(post, posts: int) -> tuple[float, float]:
    """Statements sent to PostgreSQL and requests written to Redis (a pipeline is one) per
    POST, over ``posts`` more POSTs."""
    from unittest import mock

    from django.db import connection
    from redis.connection import AbstractConnection

    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    sent = AbstractConnection.send_packed_command
    with (
        mock.patch.object(AbstractConnection, "send_packed_command", autospec=True) as redis,
        connection.execute_wrapper(count),
    ):
        redis.side_effect = sent
        for _ in range(posts):
            post()
    return statements / posts, redis.call_count / posts


if __name__ == "__main__":
    main()
