"""What reading a line costs, from each speech provider's published price, in one table.

All three bill by the character of text sent (ElevenLabs in credits, one a character for
its multilingual models; OpenAI's ``tts-1`` and ``tts-1-hd``; Azure's neural voices), so a
line's cost is known before it is read: ``costExact`` is true for a priced model. Prices
are USD per million characters at each provider's pay-as-you-go rate; a deployment with
another contract, or a rate for a model left unpriced here, sets ``ADSTUDIO_SPEECH_PRICES``
(``speech.configuration.prices``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

_PER_MILLION = Decimal(1_000_000)

# provider -> model -> USD per million characters. Sources beside each.
PRICES: dict[str, dict[str, Decimal]] = {
    # OpenAI's pricing page (openai.com/api/pricing, "Transcription and speech generation"):
    # TTS $15.00 and TTS HD $30.00 per 1M characters. gpt-4o-mini-tts is billed by tokens
    # ($0.60 per 1M text tokens in, $12.00 per 1M audio tokens out, "~$0.015 / minute"),
    # which a line's characters do not fix: it stays unpriced, its cost not exact.
    "openai": {"tts-1": Decimal("15.00"), "tts-1-hd": Decimal("30.00")},
    # ElevenLabs: no model priced yet. Its own API price list (elevenlabs.io/pricing/api)
    # was not among the pages we could read (2026-11-29); its docs give only relative
    # figures (the Models page: Flash v2.5 has a "50% lower price per character" than the
    # multilingual models), and third-party summaries disagree on the base rate (USD 0.10
    # or 0.12 per 1,000 characters for Multilingual v2/v3). Unpriced, a line's cost is
    # reported as not exact; a deployment that knows its rate sets ADSTUDIO_SPEECH_PRICES.
    "elevenlabs": {},
}


@dataclass(frozen=True)
class SpeechCost:
    usd: Decimal
    exact: bool  # the model has a price: the figure is what the provider will bill


def price_table() -> dict[str, dict[str, Decimal]]:
    override = getattr(settings, "ADSTUDIO_SPEECH_PRICES", None)
    return override if override is not None else PRICES


def speech_cost(*, provider: str, model: str, characters: int) -> SpeechCost:
    """The USD cost of ``characters`` read by ``provider``'s ``model``; 0, not exact, for a
    model without a price."""
    price = price_table().get(provider, {}).get(model)
    if price is None:
        return SpeechCost(Decimal(0), exact=False)
    return SpeechCost(
        (characters * Decimal(str(price)) / _PER_MILLION).quantize(Decimal("0.000001")),
        exact=True,
    )
