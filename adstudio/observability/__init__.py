"""Traces (OpenTelemetry) and metrics (Prometheus) of AdStudio, both off by default
(docs/OBSERVABILITY.md). The agent calls the hooks; ``current_trace_id()`` is for log
lines."""

from adstudio.observability.hooks import (
    model_call,
    readiness_checked,
    render_files_removed,
    render_finished,
    renders_resent,
    request_throttled,
    run_finished,
    run_started,
    speech_call,
    traced_run,
    traced_tool_call,
)
from adstudio.observability.tracing import current_trace_id

__all__ = [
    "current_trace_id",
    "model_call",
    "readiness_checked",
    "render_files_removed",
    "render_finished",
    "renders_resent",
    "request_throttled",
    "run_finished",
    "run_started",
    "speech_call",
    "traced_run",
    "traced_tool_call",
]
