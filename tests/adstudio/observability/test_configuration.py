"""The observability variables fail start-up clearly when they cannot work."""

from __future__ import annotations

import pytest

from tests.support.settings_module import start_up_error


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT='collector:4318' is not an OTLP/HTTP endpoint",
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://u:pw@collector:4317"},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT='grpc://u:***@collector:4317' is not",
        ),
        ({"ADSTUDIO_METRICS_TOKEN": "short"}, "ADSTUDIO_METRICS_TOKEN is shorter than 16"),
        (
            {"PROMETHEUS_MULTIPROC_DIR": "/nonexistent/metrics"},
            "PROMETHEUS_MULTIPROC_DIR='/nonexistent/metrics' is not a directory",
        ),
        ({"ADSTUDIO_TRACE_CONTENT": "maybe"}, "ADSTUDIO_TRACE_CONTENT='maybe' is not a boolean"),
    ],
)
def test_unworkable_observability_settings_are_start_up_errors(env, says):
    error = start_up_error(env)
    assert says in error
    assert "pw@" not in error  # a collector's password is never repeated
