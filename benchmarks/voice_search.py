"""Voice search latency on a 100,000-voice catalogue, through the ``search_voices`` tool.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.voice_search [--voices 100000] [--searches 1000] [--runs 5]

Creates (once) and migrates a database ``adstudio_bench`` on DATABASE_URL's server, loads
the generated catalogue (approved) through the import service when it is not there yet,
runs VACUUM ANALYZE (what autovacuum does on a live database), then runs 1,000 mixed
searches (an equal share of: language only; + gender; + accent; + style; zero results)
``--runs`` times in a fixed shuffled order, after one warm-up pass. It prints p50/p95/p99
per kind (medians over runs) and the queries each search made (CaptureQueriesContext,
in a separate pass so capturing does not add to the timings). The zero-result searches
are timed twice: with the facet cache as a live process has it, and with it emptied
before each search (a fresh process, or the first search after a catalogue change). An
empty cache means reading the facet counts that triggers keep in ``voices_facet_count``
(PostgreSQL): the benchmark prints how many rows the largest language has there (one per
value once the import has folded them; a catalogue loaded before migration 0005 keeps one
per value and batch statement until ``SELECT voices_facet_count_fold()``), as that read is
most of the cold search's cost. Results also go to
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._bench_db import (
    bench_database_url,
    create_database,
    machine,
    percentile,
    setup_django,
    write_results,
)

KINDS = ("language", "gender", "accent", "style", "zero", "zero_cold")
KIND_LABELS = {
    "language": "language only",
    "gender": "language + gender",
    "accent": "language + accent (+ gender half the time)",
    "style": "language + style (+ gender half the time)",
    "zero": "zero results + facets (cached)",
    "zero_cold": "zero results + facets (cache cleared)",
}


def load_catalogue(count: int, seed: int, reload: bool) -> float | None:
    """Import ``count`` generated voices (approved) unless exactly those are loaded."""
    from django.db import connection

    from benchmarks.catalogue_generator import generate, write
    from voices.models import Voice
    from voices.services import voice_import

    provider = f"bench{seed}"
    loaded = Voice.objects.filter(provider=provider, approved=True, active=True).count()
    if loaded == count and Voice.objects.count() == count and not reload:
        return None
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE voices_voice RESTART IDENTITY")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "catalogue.json"
        with path.open("w", encoding="utf-8") as out:
            write(generate(count, seed, provider), out)
        started = time.perf_counter()
        voice_import(path=path, approve=True)
        seconds = time.perf_counter() - started
    return seconds


def make_queries(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` searches, an equal share of each kind, in a shuffled but fixed order."""
    from adstudio.languages import language_name
    from benchmarks.catalogue_generator import LOCALES, STYLES, USE_CASES

    rng = random.Random(seed)
    weights = [locale.weight for locale in LOCALES]
    queries: list[tuple[str, dict[str, Any]]] = []
    for index in range(count):
        kind = KINDS[index % (len(KINDS) - 1)]
        locale = rng.choices(LOCALES, weights)[0]
        language = rng.choice([locale.language, language_name(locale.language)])
        args: dict[str, Any] = {"language": language}
        if kind == "gender" or (kind in ("accent", "style") and rng.random() < 0.5):
            args["gender"] = rng.choice(["male", "female"])
        if kind == "accent":
            args["accent"] = rng.choice([*locale.accents, locale.locale])
        if kind == "style":
            args["style"] = rng.choice(STYLES + USE_CASES)
        if kind == "zero":
            if rng.random() < 0.5:
                foreign = [
                    a
                    for other in LOCALES
                    if other.language != locale.language
                    for a in other.accents
                ]
                args["accent"] = rng.choice(foreign)
            else:
                args["style"] = rng.choice(["yodelling", "whispered opera", "robotic"])
            args["gender"] = rng.choice(["male", "female"])
        queries.append((kind, args))
    rng.shuffle(queries)
    return queries


def cold(queries):
    """The zero-result searches again, run apart with the facet cache emptied before each."""
    return [("zero_cold", args) for kind, args in queries if kind == "zero"]


def run_once(queries, *, count_queries: bool) -> dict[str, dict[str, Any]]:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from adstudio.tools import ToolError
    from voices.tools import SEARCH_VOICES

    kinds = sorted({kind for kind, _ in queries}, key=KINDS.index)
    timings: dict[str, list[float]] = {kind: [] for kind in kinds}
    query_counts: dict[str, list[int]] = {kind: [] for kind in kinds}
    results: dict[str, list[int]] = {kind: [] for kind in kinds}
    for kind, raw in queries:
        args = SEARCH_VOICES.args_model.model_validate(raw)
        if kind == "zero_cold":
            cache.clear()
        if count_queries:
            with CaptureQueriesContext(connection) as captured:
                found = _call(SEARCH_VOICES, args, ToolError)
            query_counts[kind].append(len(captured.captured_queries))
            continue
        started = time.perf_counter()
        found = _call(SEARCH_VOICES, args, ToolError)
        timings[kind].append((time.perf_counter() - started) * 1000)
        results[kind].append(found)
    if count_queries:
        return {kind: {"queries": sorted(set(counts))} for kind, counts in query_counts.items()}
    return {
        kind: {
            "n": len(values),
            "p50_ms": percentile(values, 0.50),
            "p95_ms": percentile(values, 0.95),
            "p99_ms": percentile(values, 0.99),
            "mean_results": statistics.mean(results[kind]),
        }
        for kind, values in timings.items()
    }


def _call(tool, args, tool_error) -> int:
    try:
        return len(tool.handler(None, args)["voices"])
    except tool_error:
        return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Voice search latency benchmark.")
    parser.add_argument("--voices", type=int, default=100_000)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="Timed passes; medians reported.")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--database", default="adstudio_bench")
    parser.add_argument("--reload", action="store_true", help="Re-import the catalogue.")
    parser.add_argument("--explain", action="store_true", help="Print one plan per kind.")
    args = parser.parse_args(argv)

    url = bench_database_url(args.database)
    create_database(url)
    setup_django(url)
    from django.db import connection

    load_seconds = load_catalogue(args.voices, args.seed, args.reload)
    if load_seconds is not None:
        print(f"loaded {args.voices:,} voices in {load_seconds:.1f} s")
    # What autovacuum does a little later on a live database: planner statistics, and the
    # visibility map that lets index-only scans skip the table.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE voices_voice")
    queries = make_queries(args.searches, args.seed)
    facet_rows = facet_count_rows()
    if facet_rows:
        print(
            "facet count rows: {total:,} in all, {largest_rows:,} for {largest} "
            "(its {largest_values} values)".format(**facet_rows)
        )
    if args.explain:
        explain(queries)

    run_once(queries, count_queries=False)  # warm-up: connection, caches, plans
    runs = [run_once(queries, count_queries=False) for _ in range(args.runs)]
    counts = run_once(queries, count_queries=True)
    # Last, as they empty the facet cache: the zero-result searches with a cold cache.
    for run in runs:
        run.update(run_once(cold(queries), count_queries=False))
    counts.update(run_once(cold(queries), count_queries=True))

    summary: dict[str, dict[str, Any]] = {}
    print(
        f"\n{args.searches} searches x {args.runs} runs on {args.voices:,} voices "
        f"(medians over runs, ms)"
    )
    print(f"{'kind':46} {'n':>4} {'p50':>7} {'p95':>7} {'p99':>7} {'results':>8} queries")
    for kind in KINDS:
        figures = {
            key: statistics.median(run[kind][key] for run in runs)
            for key in ("p50_ms", "p95_ms", "p99_ms", "mean_results")
        }
        summary[kind] = {
            "label": KIND_LABELS[kind],
            "n": runs[0][kind]["n"],
            **{key: round(value, 3) for key, value in figures.items()},
            "queries_per_search": counts[kind]["queries"],
            "runs": [run[kind] for run in runs],
        }
        print(
            f"{KIND_LABELS[kind]:46} {runs[0][kind]['n']:>4} {figures['p50_ms']:>7.2f} "
            f"{figures['p95_ms']:>7.2f} {figures['p99_ms']:>7.2f} "
            f"{figures['mean_results']:>8.1f} {counts[kind]['queries']}"
        )
    path = write_results(
        "voice_search",
        {
            "benchmark": "voice_search",
            "command": "python -m benchmarks.voice_search " + " ".join(sys.argv[1:]),
            "voices": args.voices,
            "searches": args.searches,
            "runs": args.runs,
            "seed": args.seed,
            "machine": machine(),
            "facet_count_rows": facet_rows,
            "kinds": summary,
        },
    )
    print(f"\nwrote {path}")


def facet_count_rows() -> dict[str, Any] | None:
    """The size of ``voices_facet_count`` (PostgreSQL), for the language with most rows."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT language, count(*), count(DISTINCT (gender, accent, locale, style, use_case))"
            " FROM voices_facet_count GROUP BY language ORDER BY 2 DESC, 1"
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    largest, largest_rows, largest_values = rows[0]
    return {
        "total": sum(row[1] for row in rows),
        "largest": largest,
        "largest_rows": largest_rows,
        "largest_values": largest_values,
    }


def explain(queries) -> None:
    """One plan per kind, of the SQL the tool runs; then the facet counts' read."""
    from django.db import connection

    from voices.selectors import (
        _COMPACT_FIELDS,
        _FACET_COUNTS_SQL,
        _style_search_sql,
        voice_query,
        voice_queryset,
    )

    seen: set[str] = set()
    with connection.cursor() as cursor:
        for kind, raw in queries:
            if kind in seen or kind == "zero":
                continue
            seen.add(kind)
            filters = {
                k: v for k, v in raw.items() if k in ("language", "gender", "accent", "style")
            }
            query = voice_query(**filters)
            if query.style_words:
                sql, params = _style_search_sql(query, 10)
            else:
                sql, params = (
                    voice_queryset(query).values(*_COMPACT_FIELDS)[:10].query.sql_with_params()
                )
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            print(f"--- {kind}: {raw}\n{plan}\n")
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {_FACET_COUNTS_SQL}", ["en"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
        print(f"--- zero-result facets of en\n{plan}\n")


if __name__ == "__main__":
    main()
