"""What a model call cost, from the per-model price table in settings."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from providers import Usage

_PER_MILLION = Decimal(1_000_000)


def usage_cost(*, model: str, usage: Usage) -> Decimal:
    """USD cost of ``usage`` on ``model``; 0 for a model without a price (e.g. demo).

    Cached prompt tokens are billed at the cached rate, tokens written to the cache at the
    cache-write rate, the rest of the prompt at the input rate (``prompt_tokens`` includes
    both the cached and the written ones, so each token is billed once).
    """
    prices = settings.ADSTUDIO_MODEL_PRICES.get(model)
    if not prices:
        return Decimal(0)
    cached = min(usage.cached_prompt_tokens, usage.prompt_tokens)
    written = min(usage.cache_creation_tokens, usage.prompt_tokens - cached)
    fresh = usage.prompt_tokens - cached - written
    cost = (
        fresh * Decimal(str(prices["input"]))
        + cached * Decimal(str(prices.get("cached_input", prices["input"])))
        + written * Decimal(str(prices.get("cache_write", prices["input"])))
        + usage.completion_tokens * Decimal(str(prices["output"]))
    ) / _PER_MILLION
    return cost.quantize(Decimal("0.000001"))
