"""The agent loop's own cost, without the model, and its concurrency through a worker.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.agent_loop loop [--runs 50] [--turns 100]
    DATABASE_URL=... CELERY_BROKER_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python -m benchmarks.agent_loop worker [--runs 100] [--latency 1.0]

``loop``: the standard 5-round session (search, voice draft, music draft, sfx draft,
final answer) against an in-process, zero-latency scripted model on Postgres. Prints the
milliseconds and SQL queries per round with the model's own time taken out, then the
cost of turn ``--turns`` of one long conversation against turn 1 (appends, never
rewrites), the two timed alternately.

``worker``: ``--runs`` sessions at once through a real Celery worker (thread pool) against
the fake OpenAI-compatible server answering each call after ``--latency`` seconds. Ideal
wall time is rounds x latency: concurrency should be bounded by the provider.

``commit``: what durable commits cost the loop. The ``loop`` session, ``--runs`` times
with every commit waiting for the disk (as the loop commits) and ``--runs`` times with
``synchronous_commit = off`` (as its steps committed before), alternately run by run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._bench_db import (
    CpuSteal,
    bench_database_url,
    create_database,
    empty_work_queue,
    machine,
    percentile,
    setup_django,
    write_results,
)

ROUNDS = 5


def next_step(after_user: list[tuple[str, str]], language: str) -> tuple[str, Any]:
    """The scripted director: ``after_user`` is (role, content) since the last user turn.

    Returns ("call", (name, arguments)) or ("text", final message)."""
    done = sum(1 for role, _ in after_user if role == "assistant")
    if done == 0:
        return "call", ("search_voices", {"language": language, "count": 5})
    if done == 1:
        voices = json.loads(after_user[-1][1]).get("voices", [])
        ids = [v["id"] for v in voices[:2]] or ["0"]
        tracks = [
            {"voiceId": ids[0], "text": "One plan for the whole family, every song you love."},
            {"voiceId": ids[-1], "text": "Spotify Premium Family. Try it free today."},
        ]
        return "call", ("create_voice_draft", {"tracks": tracks})
    if done == 2:
        return "call", ("create_music_draft", {"prompt": "warm acoustic pop, 100 bpm"})
    if done == 3:
        return "call", ("create_sfx_draft", {"prompts": [{"description": "soft whoosh"}]})
    return "text", "Voices, music and sound effects are ready as new drafts."


# --- in-process mode ---------------------------------------------------------------------


def scripted_binding():
    from conversations import providers
    from conversations.providers.base import (
        AssistantMessage,
        ModelResponse,
        StopReason,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )

    class ScriptedDirector:
        name = "scripted"
        seconds = 0.0  # time spent "being the model", taken out of the loop's figures

        def generate(self, request, *, on_text=None):
            started = time.perf_counter()
            if not request.tools:  # a summary request
                message = AssistantMessage(text="Earlier turns: standard sessions.")
                stop = StopReason.END_TURN
            else:
                last_user = max(
                    i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)
                )
                after = [
                    (
                        "tool" if isinstance(m, ToolResultMessage) else "assistant",
                        getattr(m, "content", ""),
                    )
                    for m in request.messages[last_user + 1 :]
                ]
                kind, value = next_step(after, language="th")
                if kind == "call":
                    name, arguments = value
                    call = ToolCall(
                        id=f"call_{len(request.messages)}",
                        name=name,
                        arguments=arguments,
                        raw_arguments=json.dumps(arguments),
                    )
                    message, stop = AssistantMessage(tool_calls=(call,)), StopReason.TOOL_CALLS
                else:
                    message, stop = AssistantMessage(text=value), StopReason.END_TURN
            response = ModelResponse(
                message=message,
                stop_reason=stop,
                provider="scripted",
                model="scripted",
                usage=Usage(prompt_tokens=1000, completion_tokens=50),
            )
            ScriptedDirector.seconds += time.perf_counter() - started
            return response

    director = ScriptedDirector()
    return director, providers.ProviderBinding(name="scripted", model="scripted", provider=director)


def measure_turn(conversation, text: str, director) -> tuple[float, int]:
    """(milliseconds without model time, queries) of one turn run in this process."""
    from django.db import connection

    from conversations.loop import run_agent
    from conversations.models import Run

    run = Run.objects.create(conversation=conversation, input_text=text)
    statements = 0

    def count(execute, sql, params, many, context):
        # Counted, not recorded: Django's debug cursor would add its own cost per query.
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    model_before = director.seconds
    with connection.execute_wrapper(count):
        started = time.perf_counter()
        run_agent(run.pk)
        elapsed = time.perf_counter() - started
    run.refresh_from_db()
    if run.status != "succeeded" or run.rounds != ROUNDS:
        sys.exit(f"run {run.pk} ended {run.status} after {run.rounds} rounds: {run.error_message}")
    return (elapsed - (director.seconds - model_before)) * 1000, statements


def loop_mode(args) -> dict:
    from django.contrib.auth.models import User

    from conversations import providers
    from conversations.models import Conversation
    from drafts.models import Ad
    from voices.models import Voice

    if not Voice.objects.filter(language="th", approved=True, active=True).exists():
        sys.exit(
            "No approved Thai voices: run `python -m benchmarks.voice_search` once first "
            "(it loads the 100,000-voice catalogue into the benchmark database)."
        )
    director, binding = scripted_binding()
    providers.route = lambda **kwargs: [binding]  # the loop asks the router for its provider
    owner, _ = User.objects.get_or_create(username="bench")

    def new_conversation() -> Conversation:
        ad = Ad.objects.create(
            owner=owner,
            title="bench",
            client="Spotify Premium family plan",
            language="th",
            duration_s=30,
        )
        return Conversation.objects.create(ad=ad)

    measure_turn(new_conversation(), "warm-up", director)
    per_run = [measure_turn(new_conversation(), "Make the ad.", director) for _ in range(args.runs)]
    ms_per_round = [ms / ROUNDS for ms, _ in per_run]
    queries_per_round = [q / ROUNDS for _, q in per_run]

    # One conversation grows to turn N - 5; then its last five turns alternate with the
    # first turns of five new conversations, so that turn 1 and turn N are timed in the
    # same minute: this machine's speed drifts more within a minute than the ratio's margin.
    conversation = new_conversation()
    for n in range(1, args.turns - 4):
        measure_turn(conversation, f"Turn {n}: another take.", director)
    firsts, lasts = [], []
    for n in range(args.turns - 4, args.turns + 1):
        firsts.append(measure_turn(new_conversation(), "Turn 1: another take.", director))
        lasts.append(measure_turn(conversation, f"Turn {n}: another take.", director))
    first = statistics.median(ms for ms, _ in firsts)
    last = statistics.median(ms for ms, _ in lasts)
    result = {
        "runs": args.runs,
        "ms_per_round": {
            "p50": statistics.median(ms_per_round),
            "p95": percentile(ms_per_round, 0.95),
        },
        "queries_per_round": {
            "median": statistics.median(queries_per_round),
            "max": max(queries_per_round),
        },
        "long_conversation": {
            "turns": args.turns,
            "turn_1_median_ms": first,
            f"turn_{args.turns - 4}_{args.turns}_median_ms": last,
            "ratio": last / first,
            "turn_1_queries": firsts[-1][1],
            f"turn_{args.turns}_queries": lasts[-1][1],
        },
    }
    print(f"loop: {args.runs} runs x {ROUNDS} rounds, model time excluded")
    print(
        f"  ms per round      p50 {result['ms_per_round']['p50']:.2f}   "
        f"p95 {result['ms_per_round']['p95']:.2f}   (target < 5)"
    )
    print(
        f"  queries per round median {result['queries_per_round']['median']:.1f}   "
        f"max {result['queries_per_round']['max']:.1f}   (target <= 15)"
    )
    print(
        f"  turn 1 {first:.1f} ms, turn {args.turns - 4}-{args.turns} {last:.1f} ms "
        "(medians, timed alternately): "
        f"ratio {last / first:.2f} (target <= 1.5); queries {firsts[-1][1]} vs {lasts[-1][1]}"
    )
    return result


# --- commit mode -------------------------------------------------------------------------


def commit_mode(args) -> dict:
    import weakref

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from conversations import providers
    from conversations.models import Conversation
    from drafts.models import Ad
    from voices.models import Voice

    if not Voice.objects.filter(language="th", approved=True, active=True).exists():
        catalogue = Path(__file__).resolve().parent.parent / "voices/fixtures/sample_catalogue.json"
        call_command("import_voices", str(catalogue), "--approve", verbosity=0)
    director, binding = scripted_binding()
    providers.route = lambda **kwargs: [binding]
    owner, _ = User.objects.get_or_create(username="bench")
    arm = {"synchronous_commit": "on"}
    configured: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def commit_setting(execute, sql, params, many, context):
        # Each pooled connection is switched to the arm's setting before its next
        # statement (one SET, outside a transaction, when the arm changes).
        raw = context["connection"].connection
        if configured.get(raw) != arm["synchronous_commit"]:
            raw.execute(f"SET synchronous_commit TO {arm['synchronous_commit']}")
            configured[raw] = arm["synchronous_commit"]
        return execute(sql, params, many, context)

    def session() -> tuple[float, int]:
        ad = Ad.objects.create(
            owner=owner, title="bench", client="Spotify Premium family plan", language="th"
        )
        return measure_turn(Conversation.objects.create(ad=ad), "Make the ad.", director)

    with connection.cursor() as cursor:
        cursor.execute("SHOW wal_sync_method")
        sync_method = cursor.fetchone()[0]
    per_round: dict[str, list[float]] = {"on": [], "off": []}
    with connection.execute_wrapper(commit_setting):
        for value in ("on", "off"):  # warm-up, both arms
            arm["synchronous_commit"] = value
            session()
        for n in range(2 * args.runs):
            value = ("on", "off")[n % 2]
            arm["synchronous_commit"] = value
            ms, _ = session()
            per_round[value].append(ms / ROUNDS)
    durable = statistics.median(per_round["on"])
    asynchronous = statistics.median(per_round["off"])
    result = {
        "runs_per_arm": args.runs,
        "wal_sync_method": sync_method,
        "ms_per_round": {
            "durable_p50": durable,
            "async_p50": asynchronous,
            "durable_p95": percentile(per_round["on"], 0.95),
            "async_p95": percentile(per_round["off"], 0.95),
        },
        "ratio": durable / asynchronous,
    }
    print(f"commit: {args.runs} runs per arm x {ROUNDS} rounds, alternately ({sync_method})")
    print(
        f"  ms per round p50: durable {durable:.2f}, synchronous_commit=off "
        f"{asynchronous:.2f}: ratio {durable / asynchronous:.3f}"
    )
    return result


# --- worker mode -------------------------------------------------------------------------


def worker_mode(args) -> dict:
    import os

    from django.conf import settings
    from django.contrib.auth.models import User

    from adstudio.celery import app as celery_app
    from conversations.models import Run
    from conversations.services import start_generation
    from drafts.models import Ad
    from tests.fakes.server import TEST_API_KEY, FakeOpenAIServer, Turn, call
    from tests.support.worker import WorkerProcess

    broker = os.environ.get("CELERY_BROKER_URL")
    if not broker or settings.CELERY_TASK_ALWAYS_EAGER:
        sys.exit("Set CELERY_BROKER_URL=redis://127.0.0.1:6379/14 for the worker mode.")
    celery_app.conf.update(task_always_eager=False, broker_url=broker)
    empty_work_queue(broker)

    def respond(body: dict) -> Turn:
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        after = [(m["role"], m.get("content") or "") for m in messages[last_user + 1 :]]
        kind, value = next_step(after, language="th")
        if kind == "call":
            name, arguments = value
            return Turn(tool_calls=(call(name, arguments),))
        return Turn(text=value)

    fake = FakeOpenAIServer().start()
    fake.responder = respond
    fake.latency = args.latency
    owner, _ = User.objects.get_or_create(username="bench")
    worker_env = {
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "CELERY_BROKER_URL": broker,
        "OPENAI_API_KEY": TEST_API_KEY,
        "OPENAI_BASE_URL": fake.base_url,
        "ADSTUDIO_OPENAI_MODEL": "fake-openai",
        "ADSTUDIO_PROVIDER_ROUTES": "default=openai",
        "ADSTUDIO_PROVIDER_FALLBACKS": "",
        # INFO: the worker says "ready." at INFO, which the benchmark waits for
        "LOG_LEVEL": "INFO",
    }
    with tempfile.TemporaryDirectory() as logs:
        workers = [
            WorkerProcess(
                log_dir=Path(logs),
                name=f"bench{n}-",
                concurrency=-(-args.runs // args.workers),
                env=worker_env,
            )
            for n in range(args.workers)
        ]
        try:
            for worker in workers:  # inside: a worker that started is stopped if one fails
                worker.start()
            ads = [
                Ad.objects.create(
                    owner=owner,
                    title="bench",
                    client="Spotify Premium family plan",
                    language="th",
                    duration_s=30,
                )
                for _ in range(args.runs)
            ]
            started = time.perf_counter()
            runs = [start_generation(ad=ad) for ad in ads]
            ids = [r.pk for r in runs]
            while Run.objects.filter(pk__in=ids, status__in=["queued", "running"]).exists():
                if time.perf_counter() - started > 300:
                    sys.exit("runs did not finish within 300 s")
                time.sleep(0.05)
            wall = time.perf_counter() - started
        finally:
            for worker in workers:
                worker.stop()
            fake.stop()
    statuses = dict.fromkeys(("succeeded", "failed"), 0)
    for status in Run.objects.filter(pk__in=ids).values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    ideal = ROUNDS * args.latency
    result = {
        "runs": args.runs,
        "workers": args.workers,
        "latency_s": args.latency,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
        "statuses": statuses,
        "problems": fake.verify(),
    }
    print(
        f"worker: {args.runs} concurrent runs x {ROUNDS} rounds, {args.latency} s per call, "
        f"{args.workers} worker process(es)"
    )
    print(f"  wall {wall:.2f} s, ideal {ideal:.2f} s: ratio {wall / ideal:.2f} (target <= 1.5)")
    print(f"  statuses {statuses}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["loop", "worker", "commit"])
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (worker mode)")
    args = parser.parse_args()
    args.runs = args.runs or {"loop": 50, "commit": 30}.get(args.mode, 100)
    url = bench_database_url()
    create_database(url)
    setup_django(url)
    with CpuSteal() as steal:
        mode = {"loop": loop_mode, "worker": worker_mode, "commit": commit_mode}[args.mode]
        result = mode(args)
    result["machine"] = machine()
    result["cpu_steal_percent"] = steal.percent
    result["cpu_reference_loop_ms"] = steal.reference_ms
    print(steal.report())
    print(f"results: {write_results(f'agent_loop_{args.mode}', result)}")


if __name__ == "__main__":
    main()
