"""Benchmarks empty the Redis databases they use, and never one that holds someone else's
keys (a test run's, a developer's broker)."""

from __future__ import annotations

import pytest
import redis

from benchmarks._bench_db import BENCH_MARKER, claim_redis
from tests.support.worker import RedisServer


@pytest.fixture
def private_redis(tmp_path):
    server = RedisServer(log_dir=tmp_path)
    server.start()
    yield server
    server.stop()


def test_a_database_holding_other_keys_is_refused_and_kept(private_redis):
    client = redis.Redis.from_url(private_redis.url)
    client.set("someone:else", "x")

    with pytest.raises(SystemExit, match="holds 1 keys that no benchmark wrote"):
        claim_redis(private_redis.url)

    assert client.get("someone:else") == b"x"


def test_an_empty_or_benchmark_database_is_emptied_and_marked(private_redis):
    client = redis.Redis.from_url(private_redis.url)

    claim_redis(private_redis.url)  # empty: taken
    client.set("celery", "left by the benchmark")
    claim_redis(private_redis.url)  # marked: emptied again

    assert client.keys() == [BENCH_MARKER.encode()]
