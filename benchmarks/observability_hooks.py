"""What the agent's observability hooks cost with traces and metrics off: instructions per
call, counted under callgrind (one mode per process, the same loop with and without the
hook; the difference divided by the calls).

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=F \\
        .venv/bin/python -m benchmarks.observability_hooks MODE

MODE: ``direct`` (the calls alone), ``model`` (each call inside ``model_call``, as
``providers/resilience.py`` makes it), ``tool`` (through ``traced_tool_call``, as the
tool executor is), ``run`` (through ``traced_run``, with ``run_started`` and
``run_finished``, as once per run). No Django set-up: the hooks need none while off.
"""

from __future__ import annotations

import argparse

from adstudio import observability
from adstudio.observability import switch

CALLS = 100_000


def generate(request, on_text=None):
    return request


def execute(call, ctx, *, record=None):
    return call


def run(run_id):
    return run_id


class _Run:
    pk = 1
    provider = ""
    conversation_id = 1
    claims = 1
    trace_context = ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["direct", "model", "tool", "run"])
    mode = parser.parse_args().mode
    assert not switch.on, "traces and metrics must be off"
    tool = observability.traced_tool_call(["tool"])(execute)
    traced = observability.traced_run(run)
    stored = _Run()
    for i in range(CALLS):
        if mode == "model":
            with observability.model_call("openai", i) as call:
                call.finish(generate(i, on_text=None))
        else:
            generate(i, on_text=None)
        if mode == "tool":
            tool(i, None, record=None)
        else:
            execute(i, None, record=None)
        if mode == "run":
            traced(i)
            observability.run_started(stored, provider="openai", resumed=False)
            observability.run_finished(1, status="succeeded")
        else:
            run(i)
    print(f"{mode}: {CALLS} iterations")


if __name__ == "__main__":
    main()
