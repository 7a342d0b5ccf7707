"""Fixtures for the tests of traces and metrics (registered in tests/conftest.py).

``tracing`` installs tracing in this process with an in-memory exporter, as a worker or
web process installs it with the OTLP one; ``collector`` is an OTLP/HTTP collector on
loopback for a worker process to export to; ``metrics_on`` records the metrics here and
gives ``/metrics`` a bearer token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adstudio.observability import metrics, switch, tracing
from tests.support.otlp import OTLPCollector, SpanRecord, from_readable

METRICS_TOKEN = "test-metrics-token-0123456789abcdef"


class Traced:
    """The spans this process finished, as records."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    def spans(self) -> list[SpanRecord]:
        return [from_readable(span) for span in self.exporter.get_finished_spans()]


@pytest.fixture
def tracing_on() -> Iterator[Callable[..., Traced]]:
    """``tracing_on(content=False)`` installs tracing in this process: the Django, Celery
    and httpx2 instrumentations and the agent's hooks. Not psycopg's: this process's
    pooled connections would stay instrumented after the test."""
    installed: list[bool] = []

    def install(*, content: bool = False) -> Traced:
        exporter = InMemorySpanExporter()
        tracing.install(
            SimpleSpanProcessor(exporter),
            content=content,
            set_global=False,
            libraries=("django", "celery", "httpx"),
        )
        installed.append(True)
        return Traced(exporter)

    yield install
    if installed:
        tracing.uninstall()


@pytest.fixture
def collector() -> Iterator[OTLPCollector]:
    server = OTLPCollector().start()
    yield server
    server.stop()


@pytest.fixture
def metrics_on(settings) -> Iterator[str]:
    """Metrics recorded in this process (its own registry, no multiprocess directory);
    yields the bearer token ``/metrics`` accepts."""
    settings.ADSTUDIO_METRICS_TOKEN = METRICS_TOKEN
    settings.PROMETHEUS_MULTIPROC_DIR = ""
    was_on = switch.metrics
    metrics.enable()
    yield METRICS_TOKEN
    if not was_on:
        metrics.disable()
