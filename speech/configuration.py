"""The speech providers' settings, read from the environment: each provider's key, base URL
(a fake server's in tests), model and, for Azure, its region. A provider without a key is
not configured: its voices are read by the guide voice, and the render says so. The music
providers' settings (``ADSTUDIO_MUSIC_PROVIDERS``) are read here too, apart from them.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from adstudio.env import env_float, env_list, env_str
from speech.pricing import PRICES

# Per provider: the variables naming its key, base URL and model (docs/speech.md). OpenAI's
# key is the one its chat models use; its speech base URL defaults to theirs.
ENVIRONMENT = {
    "elevenlabs": {
        "api_key": "ELEVENLABS_API_KEY",
        "base_url": "ELEVENLABS_BASE_URL",
        "model": "ADSTUDIO_ELEVENLABS_MODEL",
    },
    "openai": {
        "api_key": "OPENAI_API_KEY",
        "base_url": "ADSTUDIO_OPENAI_SPEECH_BASE_URL",
        "model": "ADSTUDIO_OPENAI_SPEECH_MODEL",
    },
    "azure": {
        "api_key": "AZURE_SPEECH_KEY",
        "base_url": "AZURE_SPEECH_ENDPOINT",
        "region": "AZURE_SPEECH_REGION",
    },
}


# Per music provider: the variables naming its credentials and base URL (docs/speech.md). A
# Mubert customer is an id and an access token, both needed.
MUSIC_ENVIRONMENT = {
    "mubert": {
        "customer_id": "MUBERT_CUSTOMER_ID",
        "access_token": "MUBERT_ACCESS_TOKEN",
        "base_url": "MUBERT_BASE_URL",
    },
}


def from_environment() -> dict[str, Any]:
    """``ADSTUDIO_SPEECH_PROVIDERS``: each provider's entry, and ``ADSTUDIO_MUSIC_PROVIDERS``;
    ``ImproperlyConfigured`` names the first variable whose value is bad."""
    providers: dict[str, dict[str, str]] = {}
    # Seconds one request may take, connecting and reading the whole line.
    timeout_s = env_float("ADSTUDIO_SPEECH_TIMEOUT_S", 30.0, minimum=1.0)
    for name, variables in ENVIRONMENT.items():
        entry = {field: env_str(variable) for field, variable in variables.items()}
        entry["timeout_s"] = f"{timeout_s:g}"
        base_url = entry["base_url"].rstrip("/")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ImproperlyConfigured(
                f"{variables['base_url']}={base_url!r} is not a URL: expected https://HOST[/PATH]."
            )
        entry["base_url"] = base_url
        if name == "openai" and not base_url:
            entry["base_url"] = env_str("OPENAI_BASE_URL").rstrip("/")
        if name == "azure" and entry["api_key"] and not (entry["region"] or base_url):
            raise ImproperlyConfigured(
                "AZURE_SPEECH_KEY is set but neither AZURE_SPEECH_REGION (e.g. westeurope) nor "
                "AZURE_SPEECH_ENDPOINT: set the region of the Speech resource the key belongs to."
            )
        providers[name] = entry
    return {
        "ADSTUDIO_SPEECH_PROVIDERS": providers,
        "ADSTUDIO_SPEECH_PRICES": prices("ADSTUDIO_SPEECH_PRICES"),
        "ADSTUDIO_MUSIC_PROVIDERS": music_providers(),
    }


def music_providers() -> dict[str, dict[str, str]]:
    """Each music provider's entry. A Mubert customer id without its token (or the reverse)
    is a start-up error: one alone reads as configured to no one, and silently."""
    providers: dict[str, dict[str, str]] = {}
    for name, variables in MUSIC_ENVIRONMENT.items():
        entry = {field: env_str(variable) for field, variable in variables.items()}
        base_url = entry["base_url"].rstrip("/")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ImproperlyConfigured(
                f"{variables['base_url']}={base_url!r} is not a URL: expected https://HOST[/PATH]."
            )
        entry["base_url"] = base_url
        if bool(entry["customer_id"]) != bool(entry["access_token"]):
            pair = ("customer_id", "access_token")
            given, missing = pair if entry["customer_id"] else pair[::-1]
            raise ImproperlyConfigured(
                f"{variables[given]} is set but {variables[missing]} is not: a Mubert customer "
                "needs both (or set neither for the placeholder music)."
            )
        providers[name] = entry
    return providers


def prices(name: str) -> dict[str, dict[str, Decimal]]:
    """The price table (``speech.pricing.PRICES``) with a deployment's own rates over it:
    ``elevenlabs:eleven_multilingual_v2=100,azure:neural=16``, USD per million
    characters, for a provider the table leaves unpriced or a contract of its own."""
    table = {provider: dict(models) for provider, models in PRICES.items()}
    for item in env_list(name, []):
        key, sep, value = item.partition("=")
        provider, colon, model = key.strip().partition(":")
        if not (sep and colon and provider and model.strip()):
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not provider:model=USD per million characters "
                "(e.g. elevenlabs:eleven_multilingual_v2=100)."
            )
        if provider not in ENVIRONMENT:
            raise ImproperlyConfigured(
                f"{name}: {item!r} names unknown provider {provider!r}: use one of "
                f"{', '.join(ENVIRONMENT)}."
            )
        try:
            price = Decimal(value.strip())
        except InvalidOperation:
            price = Decimal(-1)
        if not price.is_finite() or price < 0:
            raise ImproperlyConfigured(
                f"{name}: {item!r}: {value.strip()!r} is not a price (USD per million "
                "characters, e.g. 100 or 16.5)."
            )
        table.setdefault(provider, {})[model.strip()] = price
    return table
