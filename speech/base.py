"""The neutral speech request and result: the only shapes the renderer and the cache see.

Each adapter (``speech.elevenlabs``, ``speech.openai_speech``, ``speech.azure``) turns a
``SpeechRequest`` into its provider's wire format and the reply into a ``SpeechResult``, in
one module. Every adapter asks for the same audio: 16-bit signed little-endian mono PCM at
24 kHz, which all three providers offer (ElevenLabs ``pcm_24000``, OpenAI ``pcm``, Azure
``raw-24khz-16bit-mono-pcm``), so nothing above the adapters decodes a codec. Errors are
the LLM providers' hierarchy (``providers.base``), classified by ``providers.errors``, so
one retry policy reads both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

SAMPLE_RATE = 24_000
SAMPLE_WIDTH = 2  # bytes: signed 16-bit little-endian
OUTPUT_FORMAT = "pcm_s16le_24000"  # the one format the adapters ask for, in the cache key


@dataclass(frozen=True)
class SpeechRequest:
    """One line to read. ``voice_id`` is the provider's own id (``Voice.provider_voice_id``);
    ``settings`` the provider's style settings as the catalogue holds them (ElevenLabs'
    ``voice_settings``, OpenAI's ``instructions``, Azure's ``style`` and ``styledegree``):
    an adapter reads the keys it knows and ignores the rest."""

    provider: str
    voice_id: str
    text: str
    language: str  # ISO 639-1
    locale: str = ""  # e.g. th-TH, when the catalogue knows it (Azure's xml:lang)
    speed: float = 1.0
    model: str = ""  # empty: the adapter's default
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def cache_key(self) -> str:
        """What makes two readings the same audio: the provider, voice, model, text,
        language, speed, settings and output format (sha256 of their canonical JSON)."""
        canonical = json.dumps(
            {
                "provider": self.provider,
                "voice": self.voice_id,
                "model": self.model,
                "text": self.text,
                "language": self.language,
                "locale": self.locale,
                "speed": round(float(self.speed), 4),
                "settings": dict(self.settings),
                "format": OUTPUT_FORMAT,
            },
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class SpeechResult:
    """The line read: ``audio`` as 16-bit mono PCM at ``sample_rate``; ``characters`` what
    the provider bills (its own count where it reports one, else the text's length);
    ``request_id`` the provider's, for a support ticket."""

    audio: bytes
    sample_rate: int
    characters: int
    model: str
    request_id: str = ""

    @property
    def duration_s(self) -> float:
        return len(self.audio) / SAMPLE_WIDTH / self.sample_rate


class SpeechProvider(Protocol):
    """An adapter: one provider's text-to-speech over its API. ``synthesize`` raises one of
    ``providers.base``'s errors (``RateLimited``, ``TransientError``, ``BadRequest``...),
    never its SDK's or HTTP library's."""

    name: str
    default_model: str

    def synthesize(self, request: SpeechRequest) -> SpeechResult: ...


def pcm_samples(audio: bytes):
    """``audio`` (16-bit little-endian PCM) as float32 samples in -1..1."""
    import numpy as np

    usable = len(audio) - len(audio) % SAMPLE_WIDTH
    return np.frombuffer(audio[:usable], dtype="<i2").astype(np.float32) / 32768.0
