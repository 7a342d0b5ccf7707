"""What a log line is about: the request, the user, the run, its conversation and ad, and
the trace. The code serving a request (web) or executing a run (worker) binds them once;
every record logged under it carries them, so the JSON lines of one run join on its id
across the web and worker processes (``LOG_FORMAT=json``)."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse

try:  # the trace id, when OpenTelemetry is installed and a span is current
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - installed with the project
    otel_trace = None

FIELDS = ("request_id", "user_id", "run_id", "conversation_id", "ad_id")
REQUEST_ID_HEADER = "X-Request-ID"
# An id a load balancer or client sent: kept when it is this plain, else one is made.
_INCOMING_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")

# None outside any scope: what is bound there would stick to the thread for good.
_fields: ContextVar[dict[str, str] | None] = ContextVar("adstudio_log_fields", default=None)


def _clean(fields: dict[str, object]) -> dict[str, str]:
    unknown = set(fields) - set(FIELDS)
    if unknown:  # a typo would silently split the logs of one run
        raise ValueError(f"unknown log fields {sorted(unknown)}; known: {FIELDS}")
    return {name: str(value) for name, value in fields.items() if value is not None}


@contextmanager
def log_scope(**fields: object) -> Iterator[None]:
    """Bind ``fields`` for the block; what is bound inside it ends with it."""
    token = _fields.set({**(_fields.get() or {}), **_clean(fields)})
    try:
        yield
    finally:
        _fields.reset(token)


def bind(**fields: object) -> None:
    """Add ``fields`` for the rest of the enclosing scope (a request, a run's task); with
    no scope around (a management command, a shell), nothing."""
    current = _fields.get()
    if current is not None:
        _fields.set({**current, **_clean(fields)})


class LogContextFilter(logging.Filter):
    """Copies the bound fields, and the trace id when tracing is on, onto each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (_fields.get() or {}).items():
            if not hasattr(record, name):  # an explicit ``extra=`` wins
                setattr(record, name, value)
        if otel_trace is not None and not hasattr(record, "trace_id"):
            span = otel_trace.get_current_span().get_span_context()
            if span.is_valid:
                record.trace_id = format(span.trace_id, "032x")
        return True


class RequestLogContextMiddleware:
    """A request id for each request (the load balancer's ``X-Request-ID`` when it sent a
    plain one), answered in the same header, and the user id of a session. Token users are
    bound where the token is checked (``accounts.authentication``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _INCOMING_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        with log_scope(request_id=request_id):
            # Only with a session cookie: the lookup the view makes anyway, and none else.
            if settings.SESSION_COOKIE_NAME in request.COOKIES and request.user.is_authenticated:
                bind(user_id=request.user.pk)
            response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        return response
