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

``instructions``: CPU instructions per round of this Python process, counted by
callgrind, so that an A/B of a change is a count rather than a reading of a noisy clock.
Runs ``loop --runs N --turns 5`` under valgrind for ``--small`` and ``--large`` N and
divides the difference by the rounds between them (set-up cancels out). About 100x
slower than natively: a pair of counts takes minutes.

    DATABASE_URL=... .venv/bin/python -m benchmarks.agent_loop instructions \\
        [--small 2] [--large 12] [--top 15]

It runs on a database of its own (``adstudio_bench_instructions``) with the sample
catalogue. ``--database`` chooses any mode's database; ``--sample-catalogue`` lets ``loop``
import the sample catalogue into an empty one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._bench_db import (
    DEFAULT_DATABASE,
    RESULTS,
    ROOT,
    CpuSteal,
    bench_database_url,
    commit_latency,
    commit_latency_report,
    create_database,
    empty_work_queue,
    machine,
    percentile,
    setup_django,
    source_revision,
    transactions_and_flushes,
    write_results,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from conversations.models import Conversation

ROUNDS = 5
INSTRUCTIONS_DATABASE = "adstudio_bench_instructions"


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
    import providers
    from providers.base import (
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


def new_conversation(owner: User) -> Conversation:
    """A new ad (the standard Thai brief) and its conversation."""
    from conversations.models import Conversation
    from drafts.services import ad_create

    ad = ad_create(
        owner=owner,
        title="bench",
        client="Spotify Premium family plan",
        language="th",
        duration_s=30,
    )
    return Conversation.objects.create(ad=ad)


def import_sample_catalogue_if_empty() -> None:
    """The sample catalogue (360 voices, 15 of them Thai), approved, unless the database
    already has approved Thai voices (e.g. the 100,000-voice catalogue)."""
    from django.core.management import call_command

    from voices.models import Voice

    if not Voice.objects.filter(language="th", approved=True, active=True).exists():
        catalogue = ROOT / "voices/fixtures/sample_catalogue.json"
        call_command("import_voices", str(catalogue), "--approve", verbosity=0)


def measure_turn(conversation, text: str, director) -> tuple[float, int]:
    """(milliseconds without model time, queries) of one turn run in this process."""
    from django.db import connection

    from conversations.agent.loop import run_agent
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
    from django.db import connection

    import providers
    from voices.models import Voice

    if args.sample_catalogue:
        import_sample_catalogue_if_empty()
    if not Voice.objects.filter(language="th", approved=True, active=True).exists():
        sys.exit(
            "No approved Thai voices: run `python -m benchmarks.voice_search` once first "
            "(it loads the 100,000-voice catalogue into the benchmark database)."
        )
    director, binding = scripted_binding()
    providers.route = lambda **kwargs: [binding]  # the loop asks the router for its provider
    owner, _ = User.objects.get_or_create(username="bench")

    measure_turn(new_conversation(owner), "warm-up", director)
    conversations = [new_conversation(owner) for _ in range(args.runs)]
    connection.close()  # its statistics reported, so the counts below are the runs' alone
    before = transactions_and_flushes(args.database_url)
    per_run = [
        measure_turn(conversation, "Make the ad.", director) for conversation in conversations
    ]
    connection.close()
    after = transactions_and_flushes(args.database_url)
    # measure_turn's own statements (the run's row, its read at the end): 2 transactions,
    # 1 durable commit.
    commits_per_run = (after[0] - before[0]) / args.runs - 2
    durable_per_run = (after[1] - before[1]) / args.runs - 1
    ms_per_round = [ms / ROUNDS for ms, _ in per_run]
    queries_per_round = [q / ROUNDS for _, q in per_run]

    # One conversation grows to turn N - 5; then its last five turns alternate with the
    # first turns of five new conversations, so that turn 1 and turn N are timed in the
    # same minute: this machine's speed drifts more within a minute than the ratio's margin.
    conversation = new_conversation(owner)
    for n in range(1, args.turns - 4):
        measure_turn(conversation, f"Turn {n}: another take.", director)
    firsts, lasts = [], []
    for n in range(args.turns - 4, args.turns + 1):
        firsts.append(measure_turn(new_conversation(owner), "Turn 1: another take.", director))
        lasts.append(measure_turn(conversation, f"Turn {n}: another take.", director))
    first = statistics.median(ms for ms, _ in firsts)
    last = statistics.median(ms for ms, _ in lasts)
    result = {
        "runs": args.runs,
        "ms_per_round": {
            "p50": statistics.median(ms_per_round),
            "mean": statistics.fmean(ms_per_round),
            "p95": percentile(ms_per_round, 0.95),
        },
        "queries_per_round": {
            "median": statistics.median(queries_per_round),
            "max": max(queries_per_round),
        },
        "statements_per_run": statistics.median(q for _, q in per_run),
        "commits_per_run": round(commits_per_run, 2),
        "durable_commits_per_run": round(durable_per_run, 2),
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
        f"mean {result['ms_per_round']['mean']:.2f}   "
        f"p95 {result['ms_per_round']['p95']:.2f}   (target < 5)"
    )
    print(
        f"  queries per round median {result['queries_per_round']['median']:.1f}   "
        f"max {result['queries_per_round']['max']:.1f}   (target <= 15)"
    )
    print(
        f"  per run ({ROUNDS} rounds): {result['statements_per_run']:.0f} statements, "
        f"{commits_per_run:.1f} transactions committed (reads included), "
        f"{durable_per_run:.1f} durable commits (WAL flushes)"
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
    from django.db import connection

    import providers
    from conversations.models import Conversation
    from drafts.services import ad_create

    import_sample_catalogue_if_empty()
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
        ad = ad_create(
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
    from conversations.run_request import RunRequest
    from conversations.services import brief_send
    from drafts.services import ad_create
    from testbed.fake_openai import TEST_API_KEY, FakeOpenAIServer, Turn, call
    from testbed.worker import WorkerProcess

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
                ad_create(
                    owner=owner,
                    title="bench",
                    client="Spotify Premium family plan",
                    language="th",
                    duration_s=30,
                )
                for _ in range(args.runs)
            ]
            started = time.perf_counter()
            runs = [brief_send(request=RunRequest(ad=ad)) for ad in ads]
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


# --- instructions mode -------------------------------------------------------------------

# The child's interpreter ends without its teardown: the final collection and the
# freeing of every object are not per-round work, and their count moved by up to 40 M
# between two runs of the same code. The cyclic collector stays on, as in production: it
# runs by allocation counts, the same for the same work. With it off (gc.disable()), the
# garbage it kept made the allocator's count depend on where objects landed: two counts
# of the same 12 sessions differed by 2.3 M, against 0.08 M with it on.
_CALLGRIND_CHILD = (
    "import os, runpy, sys; "
    "runpy.run_module({module!r}, run_name='__main__', alter_sys=True); "
    "sys.stdout.flush(); sys.stderr.flush(); os._exit(0)"
)
_EVAL_LOOP = re.compile(r"_PyEval_EvalFrameDefault(?:'\d+)?")
# A function's line in callgrind_annotate's table: "1,234 (12.34%)  file:function [object]".
_ANNOTATE_LINE = re.compile(r"^\s*(?P<count>[\d,]+) \(\s*[\d.]+%\)\s+(?P<where>.+)$")


def callgrind_run(module: str, arguments: list[str], out_file: Path) -> float:
    """Run ``python -m module *arguments`` under callgrind into ``out_file``; returns the
    wall seconds it took. String hashing is fixed (PYTHONHASHSEED=0), the allocator libc's
    (PYTHONMALLOC=malloc), the run heartbeat silenced and the teardown skipped, so that the
    same work counts the same."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("Counting instructions needs valgrind: apt-get install valgrind")
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "LOG_LEVEL": "WARNING",
        # The run heartbeat beats by the clock, every 10 s: natively once in hundreds of
        # sessions, under valgrind every few, and as many times as the machine is slow.
        # With it (and the collector off), two counts of the same code differed by 14% per
        # round; without it, two totals of the same work by 0.0001%.
        "ADSTUDIO_HEARTBEAT_INTERVAL": "3600",
        "ADSTUDIO_RUN_STALE_AFTER": "7200",
        # pymalloc's arenas: with them, one commit counted 5.72, 6.76 and 6.92 M a round
        # in three invocations, all of the spread in _PyObject_Free and _PyObject_Malloc;
        # with libc's malloc, 5.973 and 5.959 M (docs/benchmarks/HISTORY.md, Nov 29).
        "PYTHONMALLOC": "malloc",
    }
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_file}",
        sys.executable,
        "-c",
        _CALLGRIND_CHILD.format(module=module),
        *arguments,
    ]
    log = out_file.with_suffix(".log")
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): see {log}")
    return time.perf_counter() - started


def callgrind_total(out_file: Path) -> int:
    """The file's total instruction count (its ``totals:`` or ``summary:`` line)."""
    total = None
    with out_file.open() as lines:
        for line in lines:
            if line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
    if total is None:
        sys.exit(f"{out_file} has no totals: line; did valgrind finish?")
    return total


def parse_annotate(listing: str) -> dict[str, int]:
    """Self instructions per function in a ``callgrind_annotate --inclusive=no`` listing,
    keyed "function [library]" ("?" where the listing names none: mostly the interpreter's
    inlined code). Callgrind lists a function's recursion levels apart (``f'2``); they
    are added up.

    Self counts, not inclusive ones: through the interpreter's recursion, callgrind's
    inclusive counts of its C functions exceed the program's total and say nothing of
    which Python function spent them (cProfile says that)."""
    counts: dict[str, int] = {}
    for line in listing.splitlines():
        match = _ANNOTATE_LINE.match(line)
        if not match or "PROGRAM TOTALS" in line:
            continue
        where, _, library = match["where"].partition(" [")
        function = re.sub(r"'\d+$", "", where.rpartition(":")[2])
        key = f"{function} [{Path(library.rstrip(']')).name or '?'}]"
        counts[key] = counts.get(key, 0) + int(match["count"].replace(",", ""))
    return counts


def callgrind_functions(out_file: Path) -> dict[str, int]:
    """Self instructions per function of ``out_file``."""
    listing = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", str(out_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse_annotate(listing)


def instructions_per_round(
    label: str,
    module: str,
    arguments_for: Callable[[int], list[str]],
    *,
    small: int,
    large: int,
    rounds: int = ROUNDS,
    top: int = 0,
) -> dict:
    """Count ``python -m module *arguments_for(n)`` for n = ``small`` and ``large``
    sessions; the difference over the ``(large - small) * rounds`` rounds between them is
    the instructions of a round, the process's start, imports and set-up cancelled out.

    A native run comes before each count, so that what happens once (creating and
    migrating the database, importing the catalogue, compiling an edited module) falls
    in neither; both counts must be of the same code (``source_revision``).

    Also the interpreter's own share (the self count of ``_PyEval_EvalFrameDefault``)
    and, with ``top``, where a round's instructions go: per library and the ``top``
    functions by self count."""
    directory = RESULTS / "callgrind"
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    counts: dict[int, dict] = {}
    functions: dict[int, dict[str, int]] = {}
    for n in (small, large):
        # Natively first, each time: a migration or a module edited since the last run
        # (others work in this checkout) is applied and compiled outside the count.
        subprocess.run(
            [sys.executable, "-m", module, *arguments_for(small)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            check=True,
        )
        source = source_revision()
        out_file = directory / f"{label}-{stamp}-n{n}.out"
        seconds = callgrind_run(module, arguments_for(n), out_file)
        if source_revision() != source:
            sys.exit(f"The code changed while {label} n={n} was counted: count again.")
        functions[n] = callgrind_functions(out_file)
        counts[n] = {
            "source": source,
            "file": str(out_file),
            "seconds": seconds,
            "total": callgrind_total(out_file),
            "eval_self": sum(v for k, v in functions[n].items() if _EVAL_LOOP.match(k)),
        }
        print(
            f"  {label} n={n}: {counts[n]['total']:,} instructions "
            f"({counts[n]['eval_self']:,} in the eval loop), {seconds:.0f} s under valgrind"
        )
    if counts[small]["source"] != counts[large]["source"]:
        sys.exit(
            f"The code changed between the counts of {label} ({counts[small]['source']}, "
            f"then {counts[large]['source']}): their difference is not a round's. Count again."
        )
    between = (large - small) * rounds
    result = {
        "label": label,
        "source": counts[small]["source"],
        "command": f"python -m {module} {' '.join(arguments_for(large))}",
        "small": small,
        "large": large,
        "rounds_between": between,
        "counts": counts,
        "per_round": (counts[large]["total"] - counts[small]["total"]) / between,
        "eval_self_per_round": (counts[large]["eval_self"] - counts[small]["eval_self"]) / between,
    }
    print(
        f"  {label}: {result['per_round'] / 1e6:.3f} M instructions per round, "
        f"{result['eval_self_per_round'] / 1e6:.3f} M of them the eval loop's own"
    )
    if top:
        growth = {
            k: (v - functions[small].get(k, 0)) / between for k, v in functions[large].items()
        }
        libraries: dict[str, float] = {}
        for key, count in growth.items():
            library = key.rpartition(" [")[2].rstrip("]")
            libraries[library] = libraries.get(library, 0) + count
        result["libraries_per_round"] = sorted(libraries.items(), key=lambda kv: -kv[1])[:top]
        result["top_self_per_round"] = sorted(growth.items(), key=lambda kv: -kv[1])[:top]
        print("    per round, by library:")
        for name, count in result["libraries_per_round"]:
            print(f"    {count / 1e6:9.3f} M  {name}")
        print("    per round, by function (self):")
        for name, count in result["top_self_per_round"]:
            print(f"    {count / 1e6:9.3f} M  {name}")
    return result


def instructions_mode(args) -> dict:
    """Our loop's ``loop`` session under callgrind (see the module's docstring), on a
    database of its own: another benchmark's start ends the runs it finds unfinished in
    its database (``empty_work_queue``), and a run under valgrind is unfinished for
    seconds."""
    child = ["--turns", "5", "--database", args.database, "--sample-catalogue"]
    print(
        f"instructions: loop --runs N {' '.join(child)} under callgrind, N = {args.small} "
        f"and {args.large}; a count per round of this Python process (PostgreSQL's own "
        "work, in its server processes, is not counted)"
    )
    return instructions_per_round(
        "agent_loop",
        "benchmarks.agent_loop",
        lambda n: ["loop", "--runs", str(n), *child],
        small=args.small,
        large=args.large,
        top=args.top,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["loop", "worker", "commit", "instructions"])
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (worker mode)")
    parser.add_argument("--small", type=int, default=2, help="sessions, smaller count")
    parser.add_argument("--large", type=int, default=12, help="sessions, larger count")
    parser.add_argument("--top", type=int, default=0, help="list the N costliest functions")
    parser.add_argument(
        "--database",
        help=f"the database on DATABASE_URL's server (default {DEFAULT_DATABASE}; "
        f"instructions: {INSTRUCTIONS_DATABASE})",
    )
    parser.add_argument(
        "--sample-catalogue",
        action="store_true",
        help="loop: import the sample catalogue if the database has no Thai voices",
    )
    args = parser.parse_args()
    if args.mode == "instructions":
        args.database = args.database or INSTRUCTIONS_DATABASE
        bench_database_url()  # the children need DATABASE_URL: say so before valgrind starts
        result = instructions_mode(args)
        print(f"results: {write_results('agent_loop_instructions', result)}")
        return
    args.runs = args.runs or {"loop": 50, "commit": 30}.get(args.mode, 100)
    url = bench_database_url(args.database or DEFAULT_DATABASE)
    args.database_url = url
    create_database(url)
    setup_django(url)
    disk_before = commit_latency(url)
    with CpuSteal() as steal:
        mode = {"loop": loop_mode, "worker": worker_mode, "commit": commit_mode}[args.mode]
        result = mode(args)
    disk_after = commit_latency(url)
    result["machine"] = machine()
    result["cpu_steal_percent"] = steal.percent
    result["cpu_reference_loop_ms"] = steal.reference_ms
    result["commit_latency_ms"] = {"before": disk_before, "after": disk_after}
    print(steal.report())
    print(commit_latency_report(disk_before, disk_after))
    print(f"results: {write_results(f'agent_loop_{args.mode}', result)}")


if __name__ == "__main__":
    main()
