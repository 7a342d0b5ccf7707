"""Turns traces and metrics on at start-up, in every process (web, worker, beat), as
settings say: each stays off, and costs nothing, unless configured."""

from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class ObservabilityConfig(AppConfig):
    name = "adstudio.observability"
    label = "observability"
    verbose_name = "Observability"

    def ready(self) -> None:
        from adstudio.observability import metrics, tracing

        if settings.ADSTUDIO_METRICS:
            metrics.enable()
        # Before the web server loads its middleware and the worker takes tasks: the
        # Django instrumentation adds a middleware, the Celery one connects signals.
        tracing.install_from_settings()
