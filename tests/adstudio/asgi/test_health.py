"""/healthz and /readyz as a load balancer probes them: without credentials or a known
Host, fast, and naming what is down (a private Redis and a private PostgreSQL are
stopped; the machine's shared servers are never touched)."""

from __future__ import annotations

import time

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from adstudio.asgi.health import CHECK_TIMEOUT
from tests.support.fixtures import PRIVATE_DATABASE
from tests.support.web import WebServer
from tests.support.worker import RedisServer


@pytest.mark.django_db
def test_healthz_answers_anyone_without_io(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/healthz", HTTP_HOST="10.1.2.3:8000")  # a pod's address

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"
    assert len(queries) == 0
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_is_ok_with_the_database_migrated_and_tasks_in_process(client):
    response = client.get("/readyz", HTTP_HOST="10.1.2.3:8000")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}


@pytest.mark.django_db(transaction=True)
def test_readyz_names_a_migration_the_database_lacks(client):
    """As after a deploy whose migrations have not run yet."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'drafts' AND name = %s "
            "RETURNING app, name, applied",
            ["0007_workspaces_archive_and_protected_records"],
        )
        removed = cursor.fetchall()
    assert removed, "the test expects drafts.0007 to be the latest migration"
    try:
        response = client.get("/readyz")
    finally:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)", removed
            )

    assert response.status_code == 503
    assert response.json()["checks"] == {
        "database": (
            "1 migration(s) not applied: drafts.0007_workspaces_archive_and_protected_records"
        ),
        "broker": "ok",
    }


@pytest.mark.slow
@pytest.mark.django_db
def test_readyz_names_the_broker_when_redis_is_down_and_stays_in(
    client, settings, tmp_path, metrics_on
):
    from prometheus_client import REGISTRY

    def broker_up() -> float | None:
        return REGISTRY.get_sample_value("adstudio_dependency_up", {"dependency": "broker"})

    redis = RedisServer(log_dir=tmp_path)
    redis.start()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis.url
    try:
        up = client.get("/readyz")
        with redis.down():
            started = time.monotonic()
            down = client.get("/readyz")
            took = time.monotonic() - started
            reported_down = broker_up()
        again = client.get("/readyz")
    finally:
        redis.stop()

    # Degraded, not out: the process still accepts and stores work (sent once it is back).
    assert (up.status_code, down.status_code, again.status_code) == (200, 200, 200)
    assert down.json() == {
        "status": "degraded",
        "checks": {"database": "ok", "broker": "unreachable"},
    }
    assert again.json()["status"] == "ok"
    assert (reported_down, broker_up()) == (0, 1)
    assert str(redis.port) not in down.content.decode()  # addresses stay in the log
    assert took < CHECK_TIMEOUT + 1


@pytest.mark.slow
def test_readyz_under_gunicorn_follows_the_database_down_and_back(private_postgres, tmp_path):
    web = WebServer(
        env={"DATABASE_URL": private_postgres.url(PRIVATE_DATABASE), "DEBUG": "0"},
        log=tmp_path / "gunicorn.log",
        threads=4,
    )
    web.start(ready_path="/healthz")
    try:
        ready = httpx.get(f"{web.base}/readyz", timeout=10)
        private_postgres.stop()
        started = time.monotonic()
        down = httpx.get(f"{web.base}/readyz", timeout=10)
        took = time.monotonic() - started
        alive = httpx.get(f"{web.base}/healthz", timeout=10)
        private_postgres.start()
        deadline = time.monotonic() + 15
        back = down
        while back.status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
            back = httpx.get(f"{web.base}/readyz", timeout=10)
    finally:
        web.stop()

    assert ready.status_code == 200, (ready.text, web.log.read_text()[-3000:])
    assert down.status_code == 503
    assert down.json()["checks"] == {"database": "unreachable", "broker": "ok"}
    assert took < CHECK_TIMEOUT + 1.5
    assert alive.status_code == 200  # alive though not ready: not restarted for it
    assert back.status_code == 200, (back.text, web.log.read_text()[-2000:])
    assert "readiness: database unreachable" in web.log.read_text()


@pytest.mark.django_db
def test_other_paths_still_check_the_host(client):
    """Only the probes skip the host check: it still guards everything else."""
    assert client.get("/api/", HTTP_HOST="10.1.2.3:8000").status_code == 400
