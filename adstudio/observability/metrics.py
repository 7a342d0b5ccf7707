"""Prometheus metrics of the agent's work, recorded when ``ADSTUDIO_METRICS`` is on and
served at ``/metrics`` (``adstudio.observability.views``).

Each process records into prometheus-client's registry. With ``PROMETHEUS_MULTIPROC_DIR``
set (in the environment of every web and worker process of a host, before they start)
prometheus-client keeps each process's values in files there, and a scrape of any web
process reads them all (``MultiProcessCollector``). The queue's state is read from the
database at scrape time, by the process that answers the scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from adstudio.observability import switch

RUNS_STARTED = Counter(
    "adstudio_runs_started",
    "Runs a worker began (their first claim), by the provider they were routed to.",
    ["provider"],
)
RUN_RESUMES = Counter(
    "adstudio_run_resumes",
    "Runs taken up again from what was stored: after their worker died or lost the "
    "database, or after staff requeued them.",
    ["provider"],
)
RUNS_FINISHED = Counter(
    "adstudio_runs_finished",
    "Runs ended, by the provider that answered last and their status.",
    ["provider", "status"],
)
MODEL_CALL_SECONDS = Histogram(
    "adstudio_model_call_duration_seconds",
    "Model calls (each attempt, retries included) from request to complete response, by "
    "outcome: ok, or the error's code (rate_limited, transient, ...).",
    ["provider", "model", "outcome"],
    buckets=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0),
)
MODEL_TOKENS = Counter(
    "adstudio_model_tokens",
    "Tokens of successful model calls, by type: prompt (cached ones included), cached "
    "(served from the provider's prompt cache) and completion.",
    ["provider", "model", "type"],
)
MODEL_COST = Counter(
    "adstudio_model_cost_usd",
    "What successful model calls cost, in US dollars, at ADSTUDIO_MODEL_PRICES (0 for a "
    "model without a price).",
    ["provider", "model"],
)
SPEECH_CALL_SECONDS = Histogram(
    "adstudio_speech_call_duration_seconds",
    "Text-to-speech calls (each attempt) from request to the whole audio, by outcome: ok, "
    "or the error's code.",
    ["provider", "model", "outcome"],
    buckets=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0),
)
SPEECH_CHARACTERS = Counter(
    "adstudio_speech_characters",
    "Characters the speech providers billed for lines read (cache hits are not read).",
    ["provider", "model"],
)
SPEECH_COST = Counter(
    "adstudio_speech_cost_usd",
    "What lines read cost, in US dollars, at the speech price table (0 for a model "
    "without a price).",
    ["provider", "model"],
)
TOOL_CALLS = Counter(
    "adstudio_tool_calls",
    "Tool calls executed, by outcome: ok, error (a result the model reads as an error) or "
    "raised (the run resumes from the database).",
    ["tool", "outcome"],
)
ARGUMENT_REPAIRS = Counter(
    "adstudio_tool_argument_repairs",
    "Tool calls whose arguments were not valid JSON, by result: repaired, or unparseable "
    "(answered with an error result).",
    ["provider", "tool", "result"],
)
THROTTLED = Counter(
    "adstudio_throttled_requests",
    "API requests refused with 429 by a throttle, by the throttle's scope.",
    ["scope"],
)
RENDERS_FINISHED = Counter(
    "adstudio_renders_finished",
    "Scratch tracks ended by their task, by status: done or failed.",
    ["status"],
)
RENDERS_RESENT = Counter(
    "adstudio_renders_resent",
    "Renders the recovery sweep sent again, by why: lease_expired (their worker died) or "
    "message_lost (queued, not taken within the lease); gave_up: failed past the limit.",
    ["why"],
)
RENDER_FILES_REMOVED = Counter(
    "adstudio_render_files_removed",
    "Files in storage that no render names, removed: of a claim that was lost or died "
    "mid-write (stale_claim), or of a render that is gone (render_gone).",
    ["why"],
)
READINESS = Gauge(
    "adstudio_dependency_up",
    "Whether the process reached a dependency at its last readiness check (1) or not (0): "
    "the database (down: /readyz 503) or the broker (down: /readyz 200, degraded).",
    ["dependency"],
    multiprocess_mode="livemostrecent",
)


def enable() -> None:
    switch.metrics = True
    switch.update()


def disable() -> None:
    switch.metrics = False
    switch.update()


# The queued runs' count and oldest enqueue time, read by the app that holds them
# (``count_queued_runs_with``), so this package imports nothing of the apps.
_queued_runs: Callable[[], tuple[int, Any]] | None = None


def count_queued_runs_with(read: Callable[[], tuple[int, Any]]) -> None:
    global _queued_runs
    _queued_runs = read


class QueueCollector:
    """The queued runs, counted at scrape time: how many, and how long the oldest has
    waited. One query over the index of unfinished runs."""

    def describe(self) -> list[Metric]:
        return []  # registered without a query

    def collect(self) -> Iterator[Metric]:
        if _queued_runs is None:
            return
        count, oldest = _queued_runs()
        age = (timezone.now() - oldest).total_seconds() if oldest is not None else 0.0
        yield GaugeMetricFamily("adstudio_runs_queued", "Runs waiting for a worker.", count)
        yield GaugeMetricFamily(
            "adstudio_runs_queued_oldest_age_seconds",
            "How long the oldest queued run has waited (0 when none is queued).",
            max(age, 0.0),
        )


class _ProcessRegistry:
    """This process's own registry, as one collector of the scrape's."""

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def scrape_registry() -> CollectorRegistry:
    """What a scrape reports: every process's values from the multiprocess directory
    when there is one, else this process's registry; and the queue's state."""
    registry = CollectorRegistry(auto_describe=False)
    directory = settings.PROMETHEUS_MULTIPROC_DIR
    collector: Any = (
        MultiProcessCollector(None, path=directory) if directory else _ProcessRegistry()
    )
    registry.register(collector)
    registry.register(QueueCollector())
    return registry
