"""ElevenLabs text to speech: a ``SpeechRequest`` read by ``POST /v1/text-to-speech/{voice_id}``
through the official SDK, as 16-bit mono PCM at 24 kHz (``output_format=pcm_24000``).

The SDK's ``with_raw_response.convert`` is used so that the reply's headers can be read:
``request-id`` (the id ElevenLabs' support and request stitching take) and
``character-cost`` (what the line was charged), named by the request-stitching cookbook of
the ElevenLabs docs. The SDK's retries are off (``max_retries=0``; its streamed call makes
none today either): ``providers.retry`` is the one retry policy. Its logger is left silent
(the SDK's default): its debug lines would print the ``xi-api-key`` header, which its
redaction list does not name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError
from elevenlabs.core.parse_error import ParsingError

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    ProviderError,
    TransientError,
)
from providers.errors import classify_status, scrub
from providers.tls import httpx_context
from speech.base import SAMPLE_RATE, SpeechRequest, SpeechResult

KEY_ENV = "ELEVENLABS_API_KEY"
OUTPUT_FORMAT = "pcm_24000"  # signed 16-bit little-endian mono at 24 kHz
# The API's own default model (``model_id`` in the API reference): multilingual, 29 languages.
DEFAULT_MODEL = "eleven_multilingual_v2"
# voice_settings.speed: "Values below 1.0 will slow the voice down, to a minimum of 0.7.
# Values above 1.0 will speed up the voice, to a maximum of 1.2" (docs, Text to Speech
# playground). A speed outside is clamped to the nearest end rather than refused.
SPEED_RANGE = (0.7, 1.2)
# ``language_code`` "enforces a language" only on these models: the API reference says
# the others answer it with an error (the SDK's docstring: "not supported for
# multilingual_v2 models"). For them the voice and the text decide the language.
LANGUAGE_CODE_MODELS = frozenset({"eleven_turbo_v2_5", "eleven_flash_v2_5"})
# The catalogue's voice_settings keys sent on (speed comes from SpeechRequest.speed).
_NUMBER_SETTINGS = ("stability", "similarity_boost", "style")
_FLAG_SETTINGS = ("use_speaker_boost",)
_NOT_AUDIO = ("application/json", "text/")  # a 200 that is an error page, not PCM


class ElevenLabsSpeech:
    """The ``SpeechProvider`` for ElevenLabs. ``base_url`` is the API's root
    (``https://api.elevenlabs.io``, the SDK's default when empty); ``timeout_s`` bounds
    the connection and each read. The registry passes every value as a string."""

    name = "elevenlabs"
    default_model = DEFAULT_MODEL

    def __init__(
        self,
        api_key: str,
        base_url: str = "",
        model: str = "",
        timeout_s: float | str = 30.0,
    ) -> None:
        try:
            self.timeout_s = float(timeout_s)
        except ValueError:
            raise ValueError(f"timeout_s={timeout_s!r} is not a number of seconds") from None
        # The SDK adds "v1/..." itself: a root given with /v1 would be asked for /v1/v1/.
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self._api_key = api_key
        self._client: ElevenLabs | None = None
        if api_key:
            self._client = ElevenLabs(
                api_key=api_key,  # explicit: the SDK would read ELEVENLABS_API_KEY itself
                base_url=self.base_url or None,
                timeout=self.timeout_s,
                httpx_client=httpx.Client(
                    timeout=self.timeout_s, follow_redirects=False, verify=httpx_context()
                ),
            )

    def __repr__(self) -> str:  # never the key
        return f"<ElevenLabsSpeech {self.base_url or 'https://api.elevenlabs.io'}>"

    def synthesize(self, request: SpeechRequest) -> SpeechResult:
        """The line read; any failure raised as a ``providers.base`` error."""
        if self._client is None:
            raise AuthenticationFailed(
                f"no API key: set {KEY_ENV} or choose another provider", provider=self.name
            )
        model = request.model or self.model or self.default_model
        options: dict[str, Any] = {
            "text": request.text,
            "model_id": model,
            "output_format": OUTPUT_FORMAT,
            "request_options": {"max_retries": 0},
        }
        voice_settings = self._voice_settings(request)
        if voice_settings:
            options["voice_settings"] = voice_settings
        if request.language and model in LANGUAGE_CODE_MODELS:
            options["language_code"] = request.language
        with (
            self._map_errors(),
            self._client.text_to_speech.with_raw_response.convert(
                request.voice_id, **options
            ) as response,
        ):
            headers = response.headers
            request_id = str(headers.get("request-id") or "")
            content_type = str(headers.get("content-type") or "")
            if content_type.startswith(_NOT_AUDIO):
                raise TransientError(
                    f"the reply is {content_type}, not audio (a proxy's page?)",
                    provider=self.name,
                    request_id=request_id,
                )
            audio = b"".join(response.data)
            if not audio and request.text.strip():
                raise TransientError(
                    "the reply held no audio", provider=self.name, request_id=request_id
                )
        return SpeechResult(
            audio=audio,
            sample_rate=SAMPLE_RATE,
            characters=_characters(headers.get("character-cost"), request.text),
            model=model,
            request_id=request_id,
        )

    def _voice_settings(self, request: SpeechRequest) -> dict[str, Any]:
        """``voice_settings`` for this line: the catalogue's settings ElevenLabs knows, and
        the speed, clamped to what the API accepts. Empty (the voice's stored settings
        apply) when the line asks for nothing beyond them."""
        chosen: dict[str, Any] = {}
        for key in _NUMBER_SETTINGS:
            if request.settings.get(key) is not None:
                try:
                    chosen[key] = float(request.settings[key])
                except (TypeError, ValueError):
                    raise BadRequest(
                        f"voice setting {key}={request.settings[key]!r} is not a number; "
                        "fix it in the voice's catalogue entry",
                        provider=self.name,
                    ) from None
        for key in _FLAG_SETTINGS:
            if request.settings.get(key) is not None:
                chosen[key] = _flag(request.settings[key])
        speed = float(request.speed)
        if chosen or speed != 1.0:
            low, high = SPEED_RANGE
            chosen["speed"] = min(max(speed, low), high)
        return chosen

    @contextmanager
    def _map_errors(self) -> Iterator[None]:
        """The SDK's exceptions, and httpx's under it, as ours: raised from None, so no
        message or traceback of theirs travels on."""
        try:
            yield
        except (ApiError, ParsingError) as exc:
            raise self._status_error(exc) from None
        except httpx.TimeoutException:
            raise TransientError(
                f"no response within {self.timeout_s:g}s", provider=self.name
            ) from None
        except httpx.HTTPError as exc:  # refused, reset, or a body cut short
            raise TransientError(
                f"connection failed: {type(exc).__name__}: {self._scrub(str(exc))[:200]}",
                provider=self.name,
            ) from None

    def _status_error(self, exc: ApiError | ParsingError) -> ProviderError:
        headers = {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}
        status = exc.status_code or 0
        request_id = headers.get("request-id") or _body_request_id(exc.body)
        if status < 400:  # a 2xx the SDK could not read
            return TransientError(
                f"unreadable reply (HTTP {status})", provider=self.name, request_id=request_id
            )
        return classify_status(
            status=status,
            body=exc.body,
            headers=headers,
            provider=self.name,
            key_env=KEY_ENV,
            secrets=(self._api_key,),
            request_id=request_id,
        )

    def _scrub(self, text: str) -> str:
        return scrub(text, (self._api_key,))


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _characters(header: Any, text: str) -> int:
    """What the line was charged: the ``character-cost`` header when it is a count, else
    the text's length."""
    try:
        return max(0, round(float(str(header).strip())))
    except (TypeError, ValueError, OverflowError):
        return len(text)


def _body_request_id(body: Any) -> str:
    """Newer error bodies carry the request id as ``detail.request_id``."""
    detail = body.get("detail") if isinstance(body, Mapping) else None
    return str(detail.get("request_id") or "") if isinstance(detail, Mapping) else ""
