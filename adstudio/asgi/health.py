"""Liveness and readiness for load balancers and orchestrators.

``GET /healthz``: the process answers (no I/O). ``GET /readyz``: it can serve, i.e. the
database answers with every migration applied; otherwise 503, naming what is wrong. The
broker is checked too, and reported, but its outage does not take the process out of a
load balancer: the product keeps accepting and storing work without it (runs are marked
for the recovery sweep), so it answers 200 ``degraded``. A middleware ahead of every
other answers both, so no host check, HTTPS redirect, session, authentication or
throttling applies to a probe (orchestrators probe the pod's address over plain HTTP,
every few seconds).

The body names the component and the reason in general terms only: it is public. The
details (addresses, driver messages) go to the log.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import redis
from django.conf import settings
from django.db import connections
from django.db.migrations.loader import MigrationLoader
from django.http import HttpRequest, HttpResponse, JsonResponse

from adstudio import observability

logger = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
# Seconds one check may wait: a probe answers within its orchestrator's timeout, and a
# database that takes longer than this to hand out a connection is not ready to serve.
CHECK_TIMEOUT = 2.0
MIGRATIONS_NAMED = 5  # pending migrations listed by name in the answer


class HealthCheckMiddleware:
    """Answers the two probe paths before any other middleware runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info in (HEALTH_PATH, READY_PATH):
            answer = _answer_without_checks(request.path_info, request.method)
            return answer or _no_store(readiness_response())
        return self.get_response(request)


class HealthCheckApp:
    """The probes for an ASGI server, answered in its event loop ahead of Django:
    ``/healthz`` without a thread, ``/readyz``'s checks in a pool of their own. Django's
    handler would first take the request to a thread (the middleware is synchronous),
    and a probe would wait behind whatever else the process is doing."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.checks = ThreadPoolExecutor(max_workers=2, thread_name_prefix="readyz")

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        path = scope.get("path", "")[len(scope.get("root_path", "")) :]
        if scope["type"] != "http" or path not in (HEALTH_PATH, READY_PATH):
            await self.app(scope, receive, send)
            return
        response = _answer_without_checks(path, scope["method"])
        if response is None:
            loop = asyncio.get_running_loop()
            response = _no_store(await loop.run_in_executor(self.checks, readiness_response))
        body = b"" if scope["method"] == "HEAD" else response.content
        headers = [(name.lower().encode(), value.encode()) for name, value in response.items()]
        headers.append((b"content-length", str(len(response.content)).encode()))
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers}
        )
        await send({"type": "http.response.body", "body": body})


def _answer_without_checks(path: str, method: str | None) -> HttpResponse | None:
    """A probe's answer when it needs no check (a wrong method, ``/healthz``); None for
    ``/readyz``, whose checks the caller runs where it can wait."""
    if method not in ("GET", "HEAD"):
        response = JsonResponse({"detail": "Use GET."}, status=405)
        response["Allow"] = "GET, HEAD"
        return response
    if path == HEALTH_PATH:
        return _no_store(JsonResponse({"status": "ok"}))
    return None


def readiness_response() -> JsonResponse:
    checks = {"database": check_database(), "broker": check_broker()}
    observability.readiness_checked({name: problem is None for name, problem in checks.items()})
    if checks["database"]:
        status = "unavailable"  # nothing can be served or stored
    elif checks["broker"]:
        status = "degraded"  # work is accepted and stored, and sent once the broker is back
    else:
        status = "ok"
    body = {"status": status, "checks": {name: problem or "ok" for name, problem in checks.items()}}
    return JsonResponse(body, status=503 if status == "unavailable" else 200)


def check_database() -> str | None:
    """None when the database answers and holds every migration on disk; else what is
    wrong. Borrows from the connection pool when there is one (what requests use), with
    a bounded wait."""
    connection = connections["default"]
    query = "SELECT app, name FROM django_migrations"
    try:
        pool = connection.pool if connection.vendor == "postgresql" else None
        if pool is not None:
            pool.open()  # as Django does on first use; a no-op once open
            with pool.connection(timeout=CHECK_TIMEOUT) as conn:
                applied = set(conn.execute(query).fetchall())
        else:
            with connection.cursor() as cursor:
                cursor.execute(query)
                applied = set(cursor.fetchall())
    except Exception as exc:  # any failure to answer means not ready, whatever the driver
        logger.warning("readiness: database unreachable: %s: %s", type(exc).__name__, exc)
        return "unreachable"
    pending = sorted(expected_migrations() - applied)
    if not pending:
        return None
    named = ", ".join(f"{app}.{name}" for app, name in pending[:MIGRATIONS_NAMED])
    more = f" and {len(pending) - MIGRATIONS_NAMED} more" if len(pending) > MIGRATIONS_NAMED else ""
    return f"{len(pending)} migration(s) not applied: {named}{more}"


@functools.cache
def expected_migrations() -> frozenset[tuple[str, str]]:
    """The latest migration of each app as this code has them on disk (read once per
    process: the code does not change under a running process)."""
    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes())


def check_broker() -> str | None:
    """None when the Celery broker answers a PING (or tasks run in-process); else what
    is wrong."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    try:
        _broker_client(settings.CELERY_BROKER_URL).ping()
    except redis.RedisError as exc:
        logger.warning("readiness: broker unreachable: %s: %s", type(exc).__name__, exc)
        return "unreachable"
    return None


@functools.cache
def _broker_client(url: str) -> redis.Redis:
    """One client per process (its own small connection pool), with short timeouts."""
    return redis.Redis.from_url(
        url, socket_connect_timeout=CHECK_TIMEOUT, socket_timeout=CHECK_TIMEOUT
    )


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response
