"""What making a provider's client costs: every chat and speech adapter built on its SDK or
HTTP client, with the process's shared TLS context (``providers.tls``) or with a new one
for each client, as each client made its own before.

    .venv/bin/python -m benchmarks.provider_clients [--runs 5] [--clients 20]

Each run builds ``--clients`` clients of each adapter (a new base URL each, as the router
builds one per configuration and the tests one per fake server) both ways, alternated
block by block in this one process, and reads the process's CPU. "A context each" clears
the shared contexts before every client, so that every client loads the CA certificates
again (Mubert's adapter holds two HTTP clients, which made two contexts before and here
share one: its figure understates what it cost). No request is sent. Prints CPU per
client, medians of the runs, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

from benchmarks._bench_db import ROOT, reference_loop_ms, write_results

WAYS = ("shared context", "a context each")


def adapters() -> dict[str, Callable[[str], object]]:
    from providers.anthropic_messages import AnthropicProvider
    from providers.openai_compat import OpenAICompatProvider
    from speech.azure import AzureSpeech
    from speech.elevenlabs import ElevenLabsSpeech
    from speech.mubert import MubertMusic
    from speech.openai_speech import OpenAISpeech

    return {
        "OpenAI chat": lambda url: OpenAICompatProvider(api_key="k", base_url=url),
        "Anthropic chat": lambda url: AnthropicProvider(api_key="k", base_url=url),
        "OpenAI speech": lambda url: OpenAISpeech(api_key="k", base_url=url),
        "ElevenLabs speech": lambda url: ElevenLabsSpeech(api_key="k", base_url=url),
        "Azure speech": lambda url: AzureSpeech(api_key="k", base_url=url),
        "Mubert music": lambda url: MubertMusic(customer_id="c", access_token="t", base_url=url),
    }


def block(make: Callable[[str], object], clients: int, *, fresh: bool) -> float:
    """CPU milliseconds per client over ``clients`` clients."""
    from providers import tls

    made = []
    started = time.process_time()
    for n in range(clients):
        if fresh:
            tls.httpx_context.cache_clear()
            tls.httpx2_context.cache_clear()
        made.append(make(f"https://provider{n}.example/v1"))
    spent = time.process_time() - started
    del made
    return 1000 * spent / clients


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clients", type=int, default=20)
    args = parser.parse_args()
    if args.runs < 1 or args.clients < 1:
        parser.error("--runs and --clients: at least 1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    reference = reference_loop_ms()
    kinds = adapters()
    for make in kinds.values():  # imports and first contexts out of the figures
        block(make, 1, fresh=False)
    ms: dict[str, dict[str, list[float]]] = {kind: {w: [] for w in WAYS} for kind in kinds}
    for _ in range(args.runs):
        for kind, make in kinds.items():
            for way in WAYS:
                ms[kind][way].append(block(make, args.clients, fresh=way != WAYS[0]))
    print(f"reference loop {reference:.0f} ms at the start; CPU per client, medians of "
          f"{args.runs} runs of {args.clients} clients:")  # fmt: skip
    medians = {}
    for kind in kinds:
        shared, each = (statistics.median(ms[kind][way]) for way in WAYS)
        medians[kind] = {"shared": shared, "each": each}
        print(f"  {kind:>18}: {shared:6.2f} ms shared, {each:6.2f} ms a context each "
              f"({shared / each:.2f}x)")  # fmt: skip
    path = write_results(
        "provider_clients", {"ms": ms, "medians": medians, "reference_ms": reference}
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
