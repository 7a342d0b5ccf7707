"""OpenAI's text-to-speech (``POST /v1/audio/speech``) as a ``SpeechProvider``, on the
official openai SDK.

The reply is the audio itself, asked for as ``pcm``: 24 kHz 16-bit signed little-endian mono
samples without a header, the format ``speech.base`` asks of every adapter. The SDK's
exceptions are translated by ``providers.sdk_adapter.SDKErrors``, the chat adapters' own
translation, so a refused key or a rate limit reads the same from both.

Wire details, from the API reference (platform.openai.com/docs/api-reference/audio/
createSpeech) as the SDK carries it (``types/audio/speech_create_params.py``): ``input``
holds at most 4096 characters; ``speed`` is 0.25 to 4.0; ``instructions`` "does not work
with tts-1 or tts-1-hd"; the built-in voices are the thirteen below. ``tts-1`` and
``tts-1-hd`` read only nine of them: for ``ballad``, ``verse``, ``marin`` or ``cedar`` they
answer 400, "Input should be 'nova', 'shimmer', 'echo', 'onyx', 'fable', 'alloy', 'ash',
'sage' or 'coral'".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2  # the openai SDK's HTTP client

from providers.base import AuthenticationFailed, BadRequest, TransientError
from providers.errors import classify_stream_error
from providers.openai_compat import OPENAI_SDK
from providers.sdk_adapter import SDKErrors
from speech.base import SAMPLE_RATE, SAMPLE_WIDTH, SpeechRequest, SpeechResult

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_INPUT_CHARACTERS = 4096  # the reference: "The maximum length is 4096 characters."
MIN_SPEED, MAX_SPEED = 0.25, 4.0  # the reference: "Select a value from 0.25 to 4.0."
CONNECT_TIMEOUT_S = 10.0

# The voices every speech model reads, and the ones only the GPT-4o mini TTS models read.
CLASSIC_VOICES = frozenset(
    {"alloy", "ash", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer"}
)
GPT_VOICES = CLASSIC_VOICES | {"ballad", "verse", "marin", "cedar"}


@dataclass(frozen=True)
class SpeechModel:
    """What one of OpenAI's speech models accepts."""

    voices: frozenset[str]
    # Honours ``instructions`` (tone, accent, pace); tts-1 and tts-1-hd accept the field
    # and ignore it, so it is not sent to them.
    instructions: bool


_CLASSIC = SpeechModel(voices=CLASSIC_VOICES, instructions=False)
_GPT = SpeechModel(voices=GPT_VOICES, instructions=True)
MODELS: dict[str, SpeechModel] = {
    "tts-1": _CLASSIC,
    "tts-1-hd": _CLASSIC,
    "gpt-4o-mini-tts": _GPT,
    "gpt-4o-mini-tts-2025-12-15": _GPT,
}


def speech_model(name: str) -> SpeechModel | None:
    """The model's capabilities; a dated GPT-4o mini TTS snapshot not listed here is read as
    its family; None for a model we know nothing of (the API decides what it accepts)."""
    if name in MODELS:
        return MODELS[name]
    if name.startswith("gpt-4o-mini-tts"):
        return _GPT
    return None


def models_reading(voice: str) -> list[str]:
    """The listed models that read ``voice``, for an error message."""
    return [name for name, model in MODELS.items() if voice in model.voices]


class OpenAISpeech(SDKErrors):
    """One OpenAI key and base URL; ``synthesize`` reads one line.

    ``default_model`` is ``tts-1-hd``: billed by the character at a published price, so a
    line's cost is exact before it is read, and OpenAI's higher-quality model of the two so
    billed (``tts-1`` is tuned for latency, which a rendered ad does not need).
    ``gpt-4o-mini-tts`` (instructions, four more voices) is billed by tokens: choose it with
    ``ADSTUDIO_OPENAI_SPEECH_MODEL``, and its cost is estimated, not exact.
    """

    name = "openai"
    default_model = "tts-1-hd"
    key_env = "OPENAI_API_KEY"
    sdk = OPENAI_SDK
    request_id_headers = ("x-request-id",)

    def __init__(
        self, api_key: str, base_url: str = "", model: str = "", timeout_s: float | str = 30.0
    ) -> None:
        self.timeout = _seconds(timeout_s)
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or self.default_model
        self._api_key = api_key
        self._client = None
        if api_key:
            self._client = self.sdk.new_client(
                api_key=api_key,  # explicit, so the SDK reads no credentials of its own
                base_url=self.base_url,
                max_retries=0,  # one retry policy (ours), not two stacked ones
                timeout=httpx2.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT_S)),
            )

    def __repr__(self) -> str:  # never the key
        return f"<{type(self).__name__} {self.model} {self.base_url}>"

    def synthesize(self, request: SpeechRequest) -> SpeechResult:
        """The line read as PCM; a ``providers.base`` error otherwise. A line the API would
        refuse (too long, a voice the model lacks) is refused here, before any request."""
        if self._client is None:
            raise AuthenticationFailed(
                f"no API key: set {self.key_env} or cast a voice of another provider",
                provider=self.name,
            )
        model = request.model or self.model
        body = self._body(request, model)
        with self._map_api_errors():
            raw = self._client.audio.speech.with_raw_response.create(**body)
            audio = raw.http_response.content
        request_id = self._request_id(raw.headers)
        self._check_audio(audio, raw.headers, request_id)
        return SpeechResult(
            audio=audio,
            sample_rate=SAMPLE_RATE,
            characters=len(request.text),  # OpenAI bills the input's characters
            model=model,
            request_id=request_id,
        )

    def _body(self, request: SpeechRequest, model: str) -> dict[str, Any]:
        """The request body for ``model``, or ``BadRequest`` for a line it cannot read."""
        text = request.text
        if not text.strip():
            raise BadRequest("the line is empty: there is nothing to read", provider=self.name)
        if len(text) > MAX_INPUT_CHARACTERS:
            raise BadRequest(
                f"the line is {len(text)} characters long; OpenAI reads at most "
                f"{MAX_INPUT_CHARACTERS} in one request: split it into shorter lines",
                provider=self.name,
            )
        capabilities = speech_model(model)
        if capabilities is not None and request.voice_id not in capabilities.voices:
            readers = models_reading(request.voice_id)
            hint = (
                f"it is read by {', '.join(readers)} (set ADSTUDIO_OPENAI_SPEECH_MODEL)"
                if readers
                else f"its voices are {', '.join(sorted(capabilities.voices))}"
            )
            raise BadRequest(
                f"OpenAI's {model} has no voice {request.voice_id!r}: {hint}, or cast another "
                "voice",
                provider=self.name,
            )
        body: dict[str, Any] = {
            "model": model,
            "voice": request.voice_id,
            "input": text,
            "response_format": "pcm",
            "speed": _clamped_speed(request.speed),
        }
        instructions = request.settings.get("instructions")
        if (
            capabilities is not None
            and capabilities.instructions
            and isinstance(instructions, str)
            and instructions.strip()
        ):
            body["instructions"] = instructions.strip()
        return body

    def _check_audio(self, audio: bytes, headers: Mapping[str, str], request_id: str) -> None:
        """A 200 whose body is not whole PCM: an error object (a proxy's, or the API's after
        the status was sent), nothing, or samples cut in half."""
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type == "application/json":
            try:
                body: Any = json.loads(audio)
            except ValueError:
                body = audio
            raise classify_stream_error(body, **self._error_context(request_id))
        if not audio:
            raise TransientError(
                "the reply held no audio", provider=self.name, request_id=request_id
            )
        if len(audio) % SAMPLE_WIDTH:
            raise TransientError(
                f"the audio ends mid-sample ({len(audio)} bytes): cut short",
                provider=self.name,
                request_id=request_id,
            )


def _clamped_speed(speed: float) -> float:
    """``speed`` within the API's range (a value outside it is a 400); 1.0 for garbage."""
    try:
        value = float(speed)
    except (TypeError, ValueError):
        return 1.0
    if not math.isfinite(value):
        return 1.0
    return min(max(value, MIN_SPEED), MAX_SPEED)


def _seconds(value: float | str) -> float:
    """The timeout as configured (the registry passes strings)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"timeout_s must be a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, not {value!r}")
    return seconds
