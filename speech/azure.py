"""Azure AI Speech text to speech over its REST API (``POST {endpoint}/cognitiveservices/v1``).

Not through Azure's Python Speech SDK: it speaks Azure's own websocket protocol through a
native library, so it cannot be pointed at a local REST server, and the tests could never
see its requests. The REST API takes one SSML document per line and answers with the audio
in the format the ``X-Microsoft-OutputFormat`` header names; we ask for
``raw-24khz-16bit-mono-pcm``, the neutral format of ``speech.base``.

Wire details are from Microsoft's "Text to speech REST API" reference (rest-text-to-speech)
and "Customize voice and sound with SSML" (speech-synthesis-markup-voice); billing from
"What is text to speech?", section "Billable characters" (text-to-speech). Azure has no
model to choose for its prebuilt neural voices: ``neural`` names the price table's row.
No price is set for it here (no published figure was at hand); ``speech.pricing`` then
reports the cost as not exact until ``ADSTUDIO_SPEECH_PRICES`` gives one.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import httpx

from providers.base import BadRequest, ProviderError, TransientError
from providers.errors import classify_status, error_detail, scrub
from providers.tls import httpx_context
from speech.base import SAMPLE_RATE, SpeechRequest, SpeechResult

KEY_ENV = "AZURE_SPEECH_KEY"
OUTPUT_FORMAT = "raw-24khz-16bit-mono-pcm"  # 16-bit signed little-endian mono PCM, 24 kHz
SYNTHESIS_PATH = "/cognitiveservices/v1"
VOICES_PATH = "/cognitiveservices/voices/list"
SSML_NAMESPACE = "http://www.w3.org/2001/10/synthesis"
MSTTS_NAMESPACE = "https://www.w3.org/2001/mstts"
USER_AGENT = "AdStudio/0.1"  # required; "fewer than 255 characters"

# <prosody rate>: "The rate changes should be within 0.5 to 2 times the original audio", written
# as a relative percentage ("+20%", "-25%").
RATE_RANGE = (0.5, 2.0)
# <mstts:express-as styledegree>: "The range of accepted values are: 0.01 to 2 inclusive."
STYLEDEGREE_RANGE = (0.01, 2.0)

# What each status of cognitiveservices/v1 means, from the reference's status table: Azure's
# error bodies are often empty, so the message says it.
STATUS_MEANINGS = {
    400: (
        "a required parameter is missing, empty or null, or a value is invalid (the SSML, "
        "the voice name or the output format; a header too long is a common cause)"
    ),
    401: (
        "the request isn't authorized: the Speech resource key is invalid or belongs to a "
        "resource in another region"
    ),
    415: "unsupported media type: the Content-Type must be application/ssml+xml",
    429: "too many requests: the quota or rate of requests allowed for the resource is exceeded",
    502: "bad gateway: a network or server-side problem (or invalid headers)",
    503: "service unavailable: a server-side problem",
}

# A voice's own locale opens its name: th-TH-PremwadeeNeural, sr-Latn-RS-NicholasNeural.
_VOICE_LOCALE = re.compile(r"^([a-z]{2,3}(?:-[A-Z][a-z]{3})?-[A-Z]{2})-")
# Characters XML 1.0 cannot hold, even escaped: the service would refuse the SSML.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class AzureSpeech:
    """Azure AI Speech, one pooled HTTP client per adapter. ``base_url`` (a fake server's,
    or a custom endpoint) overrides the regional ``https://{region}.tts.speech.microsoft.com``.
    Values may arrive as strings (``speech.registry`` passes its settings so)."""

    name = "azure"
    default_model = "neural"

    def __init__(
        self,
        api_key: str,
        region: str = "",
        base_url: str = "",
        timeout_s: float | str = 30.0,
    ) -> None:
        if not api_key:
            raise ValueError(f"Azure Speech needs a key: set {KEY_ENV}.")
        base = base_url.rstrip("/") or (
            f"https://{region.strip()}.tts.speech.microsoft.com" if region.strip() else ""
        )
        if not base:
            raise ValueError(
                "Azure Speech needs its region (AZURE_SPEECH_REGION, e.g. westeurope) or its "
                "endpoint (AZURE_SPEECH_ENDPOINT)."
            )
        self.base_url = base
        self.timeout_s = float(timeout_s)
        self._api_key = api_key
        self._client = httpx.Client(
            base_url=base,
            verify=httpx_context(),
            timeout=self.timeout_s,
            headers={
                "Ocp-Apim-Subscription-Key": api_key,
                "Content-Type": "application/ssml+xml",
                "X-Microsoft-OutputFormat": OUTPUT_FORMAT,
                "User-Agent": USER_AGENT,
            },
        )

    def __repr__(self) -> str:  # never the key
        return f"AzureSpeech(base_url={self.base_url!r})"

    def close(self) -> None:
        self._client.close()

    def synthesize(self, request: SpeechRequest) -> SpeechResult:
        """Read ``request.text`` with ``request.voice_id`` (Azure's short name). Raises
        ``providers.base`` errors only: a refused key, a bad request, a rate limit (with
        Azure's Retry-After), a transient failure (5xx, timeout, connection)."""
        document = ssml(request)
        try:
            response = self._client.post(SYNTHESIS_PATH, content=document.encode("utf-8"))
        except httpx.TimeoutException as exc:
            raise TransientError(
                f"no reply within {self.timeout_s:g} s ({type(exc).__name__})", provider=self.name
            ) from None
        except httpx.TransportError as exc:
            raise TransientError(
                f"could not reach {self.base_url}: {scrub(str(exc), [self._api_key])}",
                provider=self.name,
            ) from None
        request_id = response.headers.get("X-RequestId") or response.headers.get(
            "apim-request-id", ""
        )
        if response.status_code != 200:
            raise self._error(response, request_id)
        audio = response.content
        if not audio:
            # A 200 without audio: Azure says nothing when the voice cannot speak the text's
            # language (multilingual voices), or the SSML held nothing to say.
            raise BadRequest(
                f"Azure returned no audio for voice {request.voice_id!r}: the voice may not "
                "speak this text's language; choose a voice of that language.",
                provider=self.name,
                status=200,
                request_id=request_id,
            )
        return SpeechResult(
            audio=audio,
            sample_rate=SAMPLE_RATE,
            characters=billable_characters(voice_content(request)),
            model=self.default_model,
            request_id=request_id,
        )

    def _error(self, response: httpx.Response, request_id: str) -> ProviderError:
        """Our error for an error reply, its message saying what the status means for
        Azure, then what Azure said (often nothing)."""
        status = response.status_code
        detail = error_detail(response.text)
        meaning = STATUS_MEANINGS.get(status, "")
        message = "; ".join(part for part in (meaning, detail.message) if part)
        return classify_status(
            status=status,
            body={"error": {"code": detail.code, "message": message}},
            headers=response.headers,
            provider=self.name,
            key_env=KEY_ENV,
            secrets=[self._api_key],
            request_id=request_id,
        )


def ssml(request: SpeechRequest) -> str:
    """The SSML document for ``request``: one ``<voice>``, the text escaped."""
    return (
        f'<speak version="1.0" xmlns="{SSML_NAMESPACE}" xmlns:mstts="{MSTTS_NAMESPACE}" '
        f"xml:lang={quoteattr(ssml_language(request))}>"
        f"<voice name={quoteattr(request.voice_id)}>{voice_content(request)}</voice></speak>"
    )


def voice_content(request: SpeechRequest) -> str:
    """What goes inside ``<voice>``: the escaped text, wrapped in ``<prosody>`` when the
    speed is not 1 and in ``<mstts:express-as>`` when the settings name a style. Nothing
    else (no indentation): Azure bills every character in here, markup included."""
    content = escape(_NOT_XML.sub("", request.text))
    rate = prosody_rate(request.speed)
    if rate:
        content = f"<prosody rate={quoteattr(rate)}>{content}</prosody>"
    express = _express_as(request.settings)
    if express:
        content = f"<mstts:express-as {express}>{content}</mstts:express-as>"
    return content


def ssml_language(request: SpeechRequest) -> str:
    """``xml:lang``: the voice's own locale as Azure spells it (its name's prefix), else the
    catalogue's, else the language. The name first: the catalogue stores a locale as its
    languages module normalises it (Azure's ``fil-PH`` is stored ``tl-PH``), which Azure
    would not take for the voice's."""
    match = _VOICE_LOCALE.match(request.voice_id)
    if match:
        return match.group(1)
    return request.locale or request.language


def prosody_rate(speed: float) -> str:
    """Azure's relative rate for ``speed`` ("+20%"), clamped to its 0.5x-2x range; "" for
    the voice's own rate (no ``<prosody>``, no characters billed for one)."""
    try:
        speed = float(speed)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(speed):
        return ""
    low, high = RATE_RANGE
    percent = round((min(max(speed, low), high) - 1) * 100)
    return f"{percent:+d}%" if percent else ""


def _express_as(settings: Mapping[str, Any]) -> str:
    """The attributes of ``<mstts:express-as>`` from the catalogue's settings, or "" when
    they name no style (Azure ignores the element without one)."""
    style = str(settings.get("style") or "").strip()
    if not style:
        return ""
    attributes = [f"style={quoteattr(style)}"]
    degree = settings.get("styledegree")
    if degree not in (None, ""):
        try:
            value = float(degree)
        except (TypeError, ValueError):
            value = math.nan
        if math.isfinite(value):
            low, high = STYLEDEGREE_RANGE
            value = min(max(value, low), high)
            attributes.append(f"styledegree={quoteattr(f'{value:.2f}'.rstrip('0').rstrip('.'))}")
    role = str(settings.get("role") or "").strip()
    if role:
        attributes.append(f"role={quoteattr(role)}")
    return " ".join(attributes)


def billable_characters(voice_inner: str) -> int:
    """Azure's count for the SSML we send: every code point inside ``<voice>`` (the text
    and the ``prosody`` / ``express-as`` markup around it; the ``speak`` and ``voice`` tags
    are not billed), each Chinese character (CJK ideograph) counted twice. Escapes count as
    sent (``&amp;`` is five): markup is billed, so this never undercounts."""
    return sum(2 if _is_cjk_ideograph(char) else 1 for char in voice_inner)


def _is_cjk_ideograph(char: str) -> bool:
    if char < "\u2e80":  # below every CJK block: the common case, no name lookup
        return False
    return unicodedata.name(char, "").startswith(
        ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH")
    )
