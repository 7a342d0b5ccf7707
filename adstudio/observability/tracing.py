"""OpenTelemetry traces, installed only when an OTLP endpoint is configured
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, read by settings).

Installing sets up the SDK with the OTLP/HTTP exporter (configured by the standard
``OTEL_*`` variables) and the instrumentations of Django (a span per request), Celery (a
span per task published and run, the trace carried in the task's message), psycopg (a
span per statement, without its parameters) and httpx2 (the HTTP client under the
providers' SDKs). The agent's own spans (run, model calls, tool calls) come from
``adstudio.observability.hooks``. Without an endpoint nothing here is imported beyond the
API, nothing is instrumented, and every hook returns after reading one flag.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from adstudio.observability import switch

TRACER_NAME = "adstudio"
LIBRARIES = ("django", "celery", "psycopg", "httpx")
# Header values no span carries, whatever OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_* ask
# to record: matched anywhere in a header's name, so "authorization" covers
# Proxy-Authorization and Django's HTTP_AUTHORIZATION, "api-key" Anthropic's x-api-key.
SENSITIVE_HEADERS = ("authorization", "cookie", "api-key")
_SANITIZE_ENV = "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SANITIZE_FIELDS"
# Requests nobody needs a trace of: scrapes, probes and static files (unless
# OTEL_PYTHON_DJANGO_EXCLUDED_URLS says otherwise).
EXCLUDED_URLS = "/metrics$,/healthz$,/readyz$,/static/"

_provider: Any = None
_instrumentors: list[Any] = []
_propagator = TraceContextTextMapPropagator()


def install_from_settings() -> bool:
    """Install tracing with the OTLP/HTTP exporter when settings say it is on (an endpoint
    is set); False when it is off or already installed."""
    from django.conf import settings

    if not settings.ADSTUDIO_TRACING or switch.tracer is not None:
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    install(BatchSpanProcessor(OTLPSpanExporter()), content=settings.ADSTUDIO_TRACE_CONTENT)
    return True


def install(
    processor: Any,
    *,
    content: bool = False,
    set_global: bool = True,
    libraries: Iterable[str] = LIBRARIES,
) -> Any:
    """A tracer provider sending its spans to ``processor``, the instrumentations of
    ``libraries`` on it, and the agent's hooks switched on. ``set_global`` makes it the
    process's provider (OpenTelemetry allows that once per process: tests leave it off
    and ``uninstall()`` after). ``content``: spans carry prompts, completions and tool
    arguments and results (``ADSTUDIO_TRACE_CONTENT``)."""
    global _provider
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider

    if switch.tracer is not None:
        raise RuntimeError("tracing is already installed")
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "adstudio"}))  # OTEL_SERVICE_NAME wins
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(processor)
    if set_global:
        trace.set_tracer_provider(provider)
    _keep_sensitive_headers_out()
    # The stable HTTP and database conventions (http.request.method, url.full,
    # db.system.name, db.query.text), not the old ones the instrumentations still default
    # to; OTEL_SEMCONV_STABILITY_OPT_IN overrides.
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "http,database")
    for library in libraries:
        instrumentor, options = _instrumentor(library)
        instrumentor.instrument(tracer_provider=provider, **options)
        _instrumentors.append(instrumentor)
    _provider = provider
    switch.tracer = provider.get_tracer(TRACER_NAME)
    switch.content = content
    switch.update()
    return provider


def uninstall() -> None:
    """Undo ``install``: instrumentations removed, spans flushed, hooks off."""
    global _provider
    while _instrumentors:
        _instrumentors.pop().uninstrument()
    if _provider is not None:
        _provider.shutdown()
        _provider = None
    switch.tracer = None
    switch.content = False
    switch.update()


def _instrumentor(library: str) -> tuple[Any, dict[str, Any]]:
    if library == "django":
        from opentelemetry.instrumentation.django import DjangoInstrumentor

        options = {}
        if "OTEL_PYTHON_DJANGO_EXCLUDED_URLS" not in os.environ:
            options["excluded_urls"] = EXCLUDED_URLS
        return DjangoInstrumentor(), options
    if library == "celery":
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        return CeleryInstrumentor(), {}
    if library == "psycopg":
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

        # No parameters (they hold prompts and tool results) and no SQL comments.
        return PsycopgInstrumentor(), {"enable_commenter": False, "capture_parameters": False}
    if library == "httpx":
        # The openai and anthropic SDKs are built on httpx2.
        from opentelemetry.instrumentation.httpx import HTTPX2ClientInstrumentor

        return HTTPX2ClientInstrumentor(), {}
    raise ValueError(f"no instrumentation for {library!r}: choose from {', '.join(LIBRARIES)}")


def _keep_sensitive_headers_out() -> None:
    """The HTTP instrumentations redact the headers this variable names (read when they
    are instrumented): the API keys and session cookies are always among them."""
    configured = [f.strip() for f in os.environ.get(_SANITIZE_ENV, "").split(",") if f.strip()]
    os.environ[_SANITIZE_ENV] = ",".join(dict.fromkeys([*configured, *SENSITIVE_HEADERS]))


def current_trace_id() -> str | None:
    """The current trace's id as 32 hex digits (as trace back ends show it), for log
    lines; None when tracing is off or no span is current."""
    if switch.tracer is None:
        return None
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


# --- A run's attempts -----------------------------------------------------------------


def traceparent(span: Span) -> str:
    """The W3C ``traceparent`` naming ``span``."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent", "")


def span_context(value: str | None) -> SpanContext | None:
    """The span a stored ``traceparent`` names; None for an empty or malformed one."""
    if not value:
        return None
    context = trace.get_current_span(_propagator.extract({"traceparent": value}))
    span = context.get_span_context()
    return span if span.is_valid else None


def earlier_attempt_link(span: Span, stored: str | None) -> Link | None:
    """A link from ``span`` (a run's attempt) to the attempt that ``stored`` names, or
    None when there is none or it is ``span`` itself (a run resumed in-process)."""
    earlier = span_context(stored)
    own = span.get_span_context()
    if earlier is None or (earlier.trace_id, earlier.span_id) == (own.trace_id, own.span_id):
        return None
    return Link(earlier, {"adstudio.link": "earlier_attempt"})
