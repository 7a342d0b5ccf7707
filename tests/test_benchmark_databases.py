"""The benchmarks' databases are named from the environment, so that two checkouts can
run them on one server side by side."""

from __future__ import annotations

import pytest

from benchmarks import _bench_db


def test_the_prefix_names_every_benchmarks_database(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/adstudio")
    monkeypatch.setattr(_bench_db, "DATABASE_PREFIX", "other_bench")
    assert _bench_db.bench_database_url().endswith("/other_bench")
    assert _bench_db.bench_database_url("adstudio_bench_render").endswith("/other_bench_render")
    assert _bench_db.bench_database_url("elsewhere").endswith("/elsewhere")  # not a default


def test_without_the_prefix_the_names_are_as_before(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/adstudio")
    monkeypatch.setattr(_bench_db, "DATABASE_PREFIX", _bench_db.DEFAULT_DATABASE)
    assert _bench_db.bench_database_url("adstudio_bench_soak").endswith("/adstudio_bench_soak")


def test_a_prefix_that_is_no_database_name_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/adstudio")
    monkeypatch.setattr(_bench_db, "DATABASE_PREFIX", 'x"; DROP')
    with pytest.raises(SystemExit, match="ADSTUDIO_BENCH_DATABASE_PREFIX"):
        _bench_db.bench_database_url()


@pytest.mark.django_db(transaction=True)
def test_the_database_cpu_is_of_that_databases_backends_only():
    """api_load's PostgreSQL CPU: the backends of its own database, not every postgres
    process on the machine (another project's, another test process's)."""
    import os

    import psycopg
    from django.db import connection

    settings = connection.settings_dict
    url = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        ours = cursor.fetchone()[0]
    other_url = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(other_url) as other:
        elsewhere = other.execute("SELECT pg_backend_pid()").fetchone()[0]
        pids = _bench_db.backend_pids(url)
    assert ours in pids
    assert elsewhere not in pids
    assert _bench_db.process_cpu_seconds(pids={os.getpid()}) > 0
    assert _bench_db.process_cpu_seconds(pids=set()) == 0


@pytest.mark.django_db(transaction=True)
def test_the_commit_latency_is_a_reading_of_durable_single_row_commits():
    from django.db import connection

    settings = connection.settings_dict
    url = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    reading = _bench_db.commit_latency(url, commits=5)
    assert set(reading) == {"median_ms", "mean_ms"}
    assert 0 < reading["median_ms"] < 1000 and 0 < reading["mean_ms"] < 1000
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM bench_commit_probe")
        assert cursor.fetchone()[0] == 0  # nothing left behind in the database
    report = _bench_db.commit_latency_report(reading, reading)
    assert "durable commit" in report and "median / mean" in report


@pytest.mark.django_db
def test_the_chat_posts_round_trips_are_counted_per_post():
    """benchmarks.chat_post's counts: each statement to PostgreSQL, each request to Redis
    (a pipeline of two commands is one request)."""
    import os

    import redis
    from django.db import connection

    from benchmarks.chat_post import round_trips

    client = redis.Redis.from_url(os.environ["ADSTUDIO_TEST_REDIS_URL"])

    def post() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.execute("SELECT 2")
        client.ping()
        pipe = client.pipeline(transaction=False)
        pipe.ping()
        pipe.ping()
        pipe.execute()

    post()  # the connection's own hand-shake (SELECT, CLIENT SETINFO) is not a POST's
    assert round_trips(post, 3) == (2.0, 2.0)
