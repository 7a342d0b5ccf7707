"""A request whose database connection is lost, or cannot be had, while it runs.

A read (GET, HEAD) whose connection was lost is tried once more on a fresh one: after a
database restart the first use of an old connection fails, and the next succeeds.
Anything else (a write, a read that fails again, no connection to be had from the pool
within ``ADSTUDIO_DB_POOL_TIMEOUT``) answers 503 with ``Retry-After`` rather than 500:
the request was fine, the database was not there. Nothing is half-written: the transaction the error
interrupted is rolled back by PostgreSQL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from psycopg_pool import PoolTimeout

from adstudio.api_errors import error_body

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 2
_SAFE = frozenset({"GET", "HEAD"})


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        _drop_connections()
        match = request.resolver_match
        lost = not isinstance(exception.__cause__, PoolTimeout)  # not: none could be had
        if lost and request.method in _SAFE and match and not hasattr(request, "_db_retried"):
            request._db_retried = True
            logger.warning("database connection lost during %s; trying once more", request.path)
            try:
                return match.func(request, *match.args, **match.kwargs)
            except (OperationalError, InterfaceError) as again:
                _drop_connections()
                exception = again
        logger.error("database unavailable for %s %s: %s", request.method, request.path, exception)
        return unavailable(request)


def unavailable(request: HttpRequest) -> HttpResponse:
    message = "The database is unavailable; try again shortly."
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            error_body("database_unavailable", message), status=503
        )
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def _drop_connections() -> None:
    """The thread's connections, broken or not, are handed back: the pool checks each
    before its next use and replaces the dead."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()
