"""Whether traces and metrics are recorded: the one flag the hot path reads.

``on`` is true when either sink is: a hook whose sinks are both off returns after reading
it, so a process with neither pays one attribute read per hook call.
"""

from __future__ import annotations

from typing import Any

on = False
tracer: Any = None  # the project's tracer while tracing is installed (tracing.install)
metrics = False  # whether the Prometheus metrics are recorded (metrics.enable)
content = False  # whether spans carry prompts, completions and tool arguments


def update() -> None:
    global on
    on = tracer is not None or metrics
