"""Our loop against the openai-agents SDK, the standard 5-round session on each, timed in
one process in alternating blocks so that both see the same minutes of this machine.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.peers [compare] [--pairs 7] [--block 20]
    DATABASE_URL=... .venv/bin/python -m benchmarks.peers instructions [--small 2] [--large 12]

``compare``: ``--pairs`` times, a block of ``--block`` sessions of ours, one of the peer
in memory and one of the peer with ``SQLiteSession`` (the blocks' order turning from
pair to pair); prints each block's median and mean milliseconds per round, the model's
time taken out, the durable commit latency of the pair's minute (``_bench_db.commit_latency``),
and the ratios ours / peer; then their medians over the pairs whose commit latency is within
2x of the median pair's (a disk another tenant loads slows our commits, not the peer's
memory: a ratio from such a minute measures the disk, and the pair is left out, said so).

``instructions``: each side alone under callgrind (``adstudio`` and ``peer`` below) with
``--small`` and ``--large`` sessions; instructions per round from the difference
(``agent_loop.instructions_per_round``).

``adstudio --sessions N`` and ``peer --storage memory|sqlite --sessions N``: one side
alone, what ``instructions`` counts.

Ours runs on a database of its own (``adstudio_bench_peers``) holding the sample
catalogue, the same 360 voices the peer searches in memory. What each side does is in
``benchmarks/peers/openai_agents.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from importlib.metadata import version
from pathlib import Path

from benchmarks._bench_db import (
    CpuSteal,
    bench_database_url,
    commit_latency,
    create_database,
    machine,
    setup_django,
    source_revision,
    write_results,
)
from benchmarks.agent_loop import (
    ROUNDS,
    import_sample_catalogue_if_empty,
    instructions_per_round,
    measure_turn,
    new_conversation,
    scripted_binding,
)
from benchmarks.peers.openai_agents import STORAGES, OpenAIAgentsPeer, import_agents

DATABASE = "adstudio_bench_peers"
OURS = "adstudio"


class OurLoop:
    """Our side: the loop in this process on PostgreSQL, as ``agent_loop loop`` runs it."""

    def __init__(self) -> None:
        self.url = url = bench_database_url(DATABASE)
        create_database(url)
        setup_django(url)
        import_sample_catalogue_if_empty()
        from django.contrib.auth.models import User

        import providers

        self.director, binding = scripted_binding()
        providers.route = lambda **kwargs: [binding]  # the loop asks the router for it
        self.owner, _ = User.objects.get_or_create(username="bench")

    def block_ms(self, sessions: int) -> list[float]:
        return [
            measure_turn(new_conversation(self.owner), "Make the ad.", self.director)[0]
            for _ in range(sessions)
        ]


def per_round(block: list[float]) -> float:
    """A block's median session, per round."""
    return statistics.median(block) / ROUNDS


def mean_per_round(block: list[float]) -> float:
    """A block's mean session, per round: the slow commits' tail, which the median hides."""
    return statistics.fmean(block) / ROUNDS


def steady_pairs(latencies: list[float]) -> list[int]:
    """The pairs whose commit latency is within 2x of the median pair's."""
    middle = statistics.median(latencies)
    return [i for i, ms in enumerate(latencies) if middle / 2 <= ms <= middle * 2]


def compare_mode(args) -> dict:
    import_agents()
    ours = OurLoop()
    with tempfile.TemporaryDirectory(prefix="peers-") as directory, asyncio.Runner() as runner:
        peers = {s: OpenAIAgentsPeer(storage=s, directory=Path(directory)) for s in STORAGES}

        def peer_block(storage: str):
            # One event loop for every block, as an application keeps its own.
            return lambda n: runner.run(peers[storage].block_ms(n))

        sides = {OURS: ours.block_ms, **{s: peer_block(s) for s in STORAGES}}
        for run_block in sides.values():  # warm-up: imports, caches, the first connection
            run_block(3)
        print(
            f"compare: {args.pairs} pairs of blocks of {args.block} sessions x {ROUNDS} "
            f"rounds, ms per round (block median, model time excluded); {source_revision()}"
        )
        blocks: dict[str, list[float]] = {side: [] for side in sides}
        means: dict[str, list[float]] = {side: [] for side in sides}
        sessions: dict[str, list[float]] = {side: [] for side in sides}
        commits: list[dict[str, float]] = []
        order = list(sides)
        with CpuSteal() as steal:
            for pair in range(args.pairs):
                commits.append(commit_latency(ours.url, commits=20))
                turned = order[pair % len(order) :] + order[: pair % len(order)]
                for side in turned:
                    timings = sides[side](args.block)
                    sessions[side].extend(timings)
                    blocks[side].append(per_round(timings))
                    means[side].append(mean_per_round(timings))
                ratios = {s: blocks[OURS][-1] / blocks[s][-1] for s in STORAGES}
                print(
                    f"  pair {pair + 1}: adstudio {blocks[OURS][-1]:.2f} "
                    f"(mean {means[OURS][-1]:.2f}), openai-agents memory "
                    f"{blocks['memory'][-1]:.2f}, sqlite {blocks['sqlite'][-1]:.2f}; ratios "
                    f"adstudio / peer: memory {ratios['memory']:.2f}, sqlite "
                    f"{ratios['sqlite']:.2f}; durable commit {commits[-1]['median_ms']:.2f} ms"
                )
    kept = steady_pairs([c["median_ms"] for c in commits])
    ratios = {s: [blocks[OURS][i] / blocks[s][i] for i in kept] for s in STORAGES}
    mean_ratios = {s: [means[OURS][i] / means[s][i] for i in kept] for s in STORAGES}
    result = {
        "source": source_revision(),
        "openai_agents": version("openai-agents"),
        "pairs": args.pairs,
        "block": args.block,
        "ms_per_round_blocks": blocks,
        "ms_per_session": sessions,
        "ms_per_round_mean_blocks": means,
        "ms_per_round_median": {side: statistics.median(v) for side, v in blocks.items()},
        "commit_latency_ms_per_pair": commits,
        "pairs_kept": [i + 1 for i in kept],
        "ratio_per_pair": ratios,
        "ratio_median": {s: statistics.median(v) for s, v in ratios.items()},
        "ratio_of_means_median": {s: statistics.median(v) for s, v in mean_ratios.items()},
        "bars": {"sqlite": 1.0, "memory": 1.0},
        "cpu_steal_percent": steal.percent,
        "cpu_reference_loop_ms": steal.reference_ms,
        "machine": machine(),
    }
    median = result["ms_per_round_median"]
    print(
        f"  medians over the pairs: adstudio {median[OURS]:.2f} ms per round, openai-agents "
        f"memory {median['memory']:.2f}, sqlite {median['sqlite']:.2f}"
    )
    left_out = sorted(set(range(1, args.pairs + 1)) - set(result["pairs_kept"]))
    print(
        f"  ratios over {len(kept)} of {args.pairs} pairs, their durable commits within 2x "
        f"of the median pair's{f' (left out: pairs {left_out})' if left_out else ''}"
    )
    for storage in STORAGES:
        ratio, bar = result["ratio_median"][storage], result["bars"][storage]
        of_means = result["ratio_of_means_median"][storage]
        verdict = "met" if max(ratio, of_means) <= bar else "not met"
        print(
            f"  adstudio / openai-agents {storage}: median ratio {ratio:.2f}, of means "
            f"{of_means:.2f} (bar <= {bar}, both: {verdict})"
        )
    print(steal.report())
    return result


def adstudio_mode(args) -> dict:
    """Ours alone: a warm-up session and ``--sessions`` more (what callgrind counts)."""
    ours = OurLoop()
    ours.block_ms(1)
    timings = ours.block_ms(args.sessions)
    print(f"adstudio: {args.sessions} sessions, {per_round(timings):.2f} ms per round")
    return {"sessions": args.sessions, "ms_per_session": timings}


def peer_mode(args) -> dict:
    """The peer alone, without Django or PostgreSQL: a warm-up session and ``--sessions``."""
    with tempfile.TemporaryDirectory(prefix="peers-") as directory:
        peer = OpenAIAgentsPeer(storage=args.storage, directory=Path(directory))
        with asyncio.Runner() as runner:
            runner.run(peer.block_ms(1))
            timings = runner.run(peer.block_ms(args.sessions))
    print(
        f"openai-agents {args.storage}: {args.sessions} sessions, "
        f"{per_round(timings):.2f} ms per round"
    )
    return {"storage": args.storage, "sessions": args.sessions, "ms_per_session": timings}


def instructions_mode(args) -> dict:
    """Each side alone under callgrind; instructions per round and the ratios."""
    bench_database_url()  # ours needs DATABASE_URL: say so before valgrind starts
    print(
        f"instructions: each side alone under callgrind, {args.small} and {args.large} "
        "sessions; counts of the Python process only (PostgreSQL's server processes are "
        "not counted, SQLite runs inside the peer's process and is)"
    )
    counts = {}
    for side in args.sides:
        arguments = (
            (lambda n: [OURS, "--sessions", str(n)])
            if side == OURS
            else (lambda n, side=side: ["peer", "--storage", side, "--sessions", str(n)])
        )
        counts[side] = instructions_per_round(
            f"peers-{side}",
            "benchmarks.peers",
            arguments,
            small=args.small,
            large=args.large,
            top=args.top,
        )
    result = {"source": source_revision(), "sides": counts}
    if OURS in counts:
        for side in counts.keys() - {OURS}:
            ratio = counts[OURS]["per_round"] / counts[side]["per_round"]
            eval_ratio = counts[OURS]["eval_self_per_round"] / counts[side]["eval_self_per_round"]
            result[f"ratio_{side}"] = {"instructions": ratio, "eval_loop": eval_ratio}
            print(
                f"  adstudio / openai-agents {side}: {ratio:.2f} in instructions, "
                f"{eval_ratio:.2f} in the eval loop's own"
            )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "mode", nargs="?", default="compare", choices=["compare", "instructions", OURS, "peer"]
    )
    parser.add_argument("--pairs", type=int, default=7, help="compare: pairs of blocks (>= 5)")
    parser.add_argument("--block", type=int, default=20, help="compare: sessions per block")
    parser.add_argument("--sessions", type=int, default=10, help="adstudio, peer: sessions")
    parser.add_argument("--storage", choices=STORAGES, default="memory", help="peer: storage")
    parser.add_argument("--small", type=int, default=2, help="instructions: fewer sessions")
    parser.add_argument("--large", type=int, default=12, help="instructions: more sessions")
    parser.add_argument("--top", type=int, default=0, help="instructions: costliest functions")
    parser.add_argument(
        "--sides",
        nargs="+",
        choices=[OURS, *STORAGES],
        default=[OURS, *STORAGES],
        help="instructions: which sides to count",
    )
    args = parser.parse_args()
    if args.mode == "compare" and args.pairs < 5:
        parser.error("--pairs: at least 5, so that the medians mean something")
    mode = {
        "compare": compare_mode,
        "instructions": instructions_mode,
        OURS: adstudio_mode,
        "peer": peer_mode,
    }[args.mode]
    result = mode(args)
    print(f"results: {write_results(f'peers_{args.mode}', result)}")


if __name__ == "__main__":
    main()
