"""Which speech providers are configured, and their adapters: each provider's module is
imported only when a line is read through it (the SDKs take time to load)."""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

from django.conf import settings

from speech.base import SpeechProvider

# Provider name -> (its adapter's module and class, the name people know it by).
ADAPTERS = {
    "elevenlabs": ("speech.elevenlabs", "ElevenLabsSpeech"),
    "openai": ("speech.openai_speech", "OpenAISpeech"),
    "azure": ("speech.azure", "AzureSpeech"),
}
LABELS = {"elevenlabs": "ElevenLabs", "openai": "OpenAI", "azure": "Azure AI Speech"}
SPEECH_PROVIDER_NAMES = tuple(ADAPTERS)


def provider_label(name: str) -> str:
    return LABELS.get(name, name)


def provider_entry(name: str) -> dict[str, Any]:
    return dict((getattr(settings, "ADSTUDIO_SPEECH_PROVIDERS", {}) or {}).get(name) or {})


def is_configured(name: str) -> bool:
    """Whether a voice of this provider can be read by it: its adapter exists and its key
    is set."""
    return name in ADAPTERS and bool(provider_entry(name).get("api_key"))


def model_for(name: str) -> str:
    """The model a provider reads with: its configured one, else its adapter's default."""
    configured = provider_entry(name).get("model")
    if configured:
        return str(configured)
    module, cls = ADAPTERS[name]
    return getattr(import_module(module), cls).default_model


def speech_provider(name: str) -> SpeechProvider | None:
    """The adapter for ``name`` as configured now, or None when it is not configured."""
    if not is_configured(name):
        return None
    entry = provider_entry(name)
    return _adapter(name, tuple(sorted((k, str(v)) for k, v in entry.items() if v)))


@cache
def _adapter(name: str, entry: tuple[tuple[str, str], ...]) -> SpeechProvider:
    """One adapter per configuration, kept: each holds a connection pool."""
    module, cls = ADAPTERS[name]
    return getattr(import_module(module), cls)(**dict(entry))
