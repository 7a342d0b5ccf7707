"""Mubert's AI Music API v3 as an ad's music maker: ``MubertMusic.compose`` asks for a track
from a text prompt, waits while it is generated, downloads it as WAV and hands back 16-bit
mono PCM, the shape ``speech.base`` gives every line.

Wire details, each from Mubert's own reference: the OpenAPI document of
music-api.mubert.com ("Mubert AI Music API v3", version 3.0, as published on the API's
swagger page), Mubert's documentation page (mubert.com/api/docs) and Mubert's own usage
guide for the API (github.com/MubertAI/skills, ``mubert-generate/SKILL.md`` and
``mubert-generate/references/api_reference.md``, called "the skills reference" below).

- Base URL ``https://music-api.mubert.com/api/v3``; the ``public`` directory is the
  customers' (mubert.com/api/docs, "Authentication").
- Auth: the headers ``customer-id`` and ``access-token`` on every public endpoint (the
  OpenAPI ``securitySchemes`` customerId/accessToken; mubert.com/api/docs "For
  Customers"). The company's ``company-id``/``license-token`` pair is for the ``service``
  directory only, which this adapter never calls.
- ``POST /public/tracks`` (OpenAPI "Create Track", request body
  ``TrackCreatePublicRequest``): JSON; ``duration`` required, an integer of at least 5
  seconds; one of ``prompt`` (at most 255 characters in the OpenAPI, 200 in the skills'
  reference: we hold to 200), ``playlist_index`` or ``image``; ``format`` ``mp3`` or
  ``wav`` (``TrackFormatEnum``); ``mode`` ``track``, ``loop``, ``jingle`` or ``mix``, a
  prompt taking ``track`` or ``loop`` only (skills reference). ``bitrate`` and
  ``intensity`` are left out: the license's defaults apply (128 and ``high``, skills
  reference), and a license may forbid others (``LicenseForbiddenBitrate``,
  ``LicenseForbiddenIntensity``). The reply is ``{"data": TrackPublicResource}``, whose
  ``id`` (a UUID) names the track.
- ``GET /public/tracks/{track}`` (OpenAPI "Get Track by ID"): ``{"data":
  TrackShowPublicResource}``, whose ``generations`` each carry ``format``, ``bitrate``,
  ``status`` and ``url`` ("Download link", nullable). The statuses are ``processing``,
  ``done`` and ``failed`` (``TrackGenerationStatusEnum``); the skills reference's example
  shows ``completed``, which is read as done too.
- Errors: 401 ``UnauthenticatedException``; 403 ``Error403Response``, whose ``code`` says
  why (``AccessTokenExpired``, ``LicenseForbidden*``, ``LicenseLimit*``...); 404
  ``Error404Response`` (``TrackNotFound``); 422 "Unprocessable Content", with no schema.
  Each body is ``{"message", "description", "code"}``. The reference lists no 429 or
  5xx; they are read as any HTTP API's (``Retry-After`` honoured).

Asking for WAV keeps ffmpeg out: ``soundfile`` decodes it. The download link is fetched
without the credentials (it is a file URL, possibly another host's).
"""

from __future__ import annotations

import io
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import httpx

from providers.base import (
    BadRequest,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from providers.errors import classify_status, error_detail, scrub
from providers.tls import httpx_context

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://music-api.mubert.com/api/v3"
TRACKS_PATH = "/public/tracks"
CUSTOMER_ENV = "MUBERT_CUSTOMER_ID"
KEY_ENV = "MUBERT_ACCESS_TOKEN"
FORMAT = "wav"
MODE = "track"
MIN_DURATION_S = 5  # TrackCreatePublicRequest.duration: "minimum: 5"
MAX_PROMPT_CHARACTERS = 200  # the skills reference's limit (the OpenAPI's is 255)
CONNECT_TIMEOUT_S = 10.0
SAMPLE_WIDTH = 2  # bytes: signed 16-bit little-endian

READY = frozenset({"done", "completed"})  # "done": the OpenAPI enum; "completed": skills
FAILED = "failed"

# Mubert's 403 codes that are not a refused credential (Error403Response's discriminator):
# what each means for us. A license that forbids a parameter is our request's fault; a
# spent limit is fixed by the account, not by waiting; too many generations at once is.
LICENSE_REFUSALS: dict[str, tuple[type[ProviderError], str]] = {
    "LicenseForbiddenBitrate": (BadRequest, "the license does not allow this bitrate"),
    "LicenseForbiddenDuration": (BadRequest, "the license does not allow this duration"),
    "LicenseForbiddenFeature": (BadRequest, "the license does not include track generation"),
    "LicenseForbiddenFormat": (BadRequest, "the license does not allow WAV"),
    "LicenseForbiddenIntensity": (BadRequest, "the license does not allow this intensity"),
    "LicenseForbiddenMode": (BadRequest, "the license does not allow mode 'track'"),
    "LicenseLimitTracksCount": (QuotaExhausted, "the license's track count is spent"),
    "LicenseLimitTracksDuration": (QuotaExhausted, "the license's track minutes are spent"),
    "LicenseExpired": (QuotaExhausted, "the license has expired"),
    "LicenseIsNotActive": (QuotaExhausted, "the license is not active"),
    "LicenseLimitConcurrentTrackGenerationsCount": (
        RateLimited,
        "too many tracks are being generated at once",
    ),
}


@dataclass(frozen=True)
class MusicTrack:
    """A composed track: ``audio`` as 16-bit signed little-endian mono PCM at
    ``sample_rate`` (the file's own rate); ``request_id`` Mubert's track id."""

    audio: bytes
    sample_rate: int
    request_id: str

    @property
    def duration_s(self) -> float:
        return len(self.audio) / SAMPLE_WIDTH / self.sample_rate


class MubertMusic:
    """One Mubert customer (its id and access token) and base URL, one pooled client.
    Numbers may arrive as strings (``speech.music_registry`` passes its settings so).
    ``compose`` waits at most ``max_wait_s`` for a track, polling every
    ``poll_interval_s``; each HTTP request may take ``timeout_s``."""

    name = "mubert"

    def __init__(
        self,
        customer_id: str,
        access_token: str,
        base_url: str = "",
        timeout_s: float | str = 30.0,
        poll_interval_s: float | str = 1.0,
        max_wait_s: float | str = 120.0,
    ) -> None:
        if not (customer_id and access_token):
            raise ValueError(f"Mubert needs a customer: set {CUSTOMER_ENV} and {KEY_ENV}.")
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.timeout_s = _seconds("timeout_s", timeout_s)
        self.poll_interval_s = _seconds("poll_interval_s", poll_interval_s)
        self.max_wait_s = _seconds("max_wait_s", max_wait_s)
        self._secrets = (access_token, customer_id)
        timeout = httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, CONNECT_TIMEOUT_S))
        self._client = httpx.Client(
            base_url=self.base_url,
            verify=httpx_context(),
            timeout=timeout,
            headers={
                "customer-id": customer_id,
                "access-token": access_token,
                "Accept": "application/json",
            },
        )
        # The download link is a file's URL: no credentials go with it.
        self._files = httpx.Client(timeout=timeout, follow_redirects=True, verify=httpx_context())

    def __repr__(self) -> str:  # never the token or the customer
        return f"MubertMusic(base_url={self.base_url!r})"

    def close(self) -> None:
        self._client.close()
        self._files.close()

    def compose(self, *, prompt: str, duration_s: int) -> MusicTrack:
        """A track of ``duration_s`` seconds for ``prompt``. Raises ``providers.base``
        errors only: ``BadRequest`` for a prompt or length Mubert would refuse (before any
        request) or a request it refused; ``AuthenticationFailed``, ``QuotaExhausted``,
        ``RateLimited``; ``TransientError`` for a timeout, a lost connection, a 5xx, a
        generation that failed, or a track not ready within ``max_wait_s`` (its message
        names the track, which Mubert keeps)."""
        body = self._body(prompt, duration_s)
        started = time.monotonic()
        created = self._api("POST", TRACKS_PATH, json=body)
        track = created.get("data") if isinstance(created, dict) else None
        track_id = str(track.get("id") or "") if isinstance(track, dict) else ""
        if not track_id:
            raise TransientError(
                "Mubert's reply to the new track held no track id", provider=self.name
            )
        url, polls = self._ready_url(track_id, track, started + self.max_wait_s)
        audio, sample_rate = self._download(track_id, url)
        logger.info(
            "mubert track %s: %d s asked, %.1f s received after %.1f s and %d polls",
            track_id,
            duration_s,
            len(audio) / SAMPLE_WIDTH / sample_rate,
            time.monotonic() - started,
            polls,
        )
        return MusicTrack(audio=audio, sample_rate=sample_rate, request_id=track_id)

    # --- the request ---------------------------------------------------------------

    def _body(self, prompt: str, duration_s: int) -> dict[str, Any]:
        text = " ".join(str(prompt or "").split())
        if not text:
            raise BadRequest("the music prompt is empty: describe the music", provider=self.name)
        if len(text) > MAX_PROMPT_CHARACTERS:
            raise BadRequest(
                f"the music prompt is {len(text)} characters long; Mubert takes at most "
                f"{MAX_PROMPT_CHARACTERS}: shorten it",
                provider=self.name,
            )
        if isinstance(duration_s, bool) or not isinstance(duration_s, int):
            raise BadRequest(
                f"the music's length must be whole seconds, not {duration_s!r}",
                provider=self.name,
            )
        if duration_s < MIN_DURATION_S:
            raise BadRequest(
                f"Mubert composes tracks of {MIN_DURATION_S} s or more, not {duration_s} s",
                provider=self.name,
            )
        return {"prompt": text, "duration": duration_s, "format": FORMAT, "mode": MODE}

    # --- waiting for the track -----------------------------------------------------

    def _ready_url(self, track_id: str, track: dict[str, Any], deadline: float) -> tuple[str, int]:
        """The download link of the track's WAV once generated, and the polls it took; the
        last poll is sent at ``deadline`` (so the wait is bounded by it and one request's
        timeout). A rate limit or a transient failure while polling is waited out (the track is
        made and billed already: asking again would make another); the rest is raised."""
        polls = 0
        state = _generation_state(track)
        last = f"status {state[0]!r}" if state[0] else "no generation yet"
        while True:
            status, url = state
            if status in READY and url:
                return url, polls
            if status == FAILED:
                raise TransientError(
                    f"Mubert could not generate track {track_id} (its generation failed): "
                    "compose again",
                    provider=self.name,
                    request_id=track_id,
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TransientError(
                    f"Mubert track {track_id} was not ready within {self.max_wait_s:g} s "
                    f"({last}); it may still finish: compose again or raise max_wait_s",
                    provider=self.name,
                    request_id=track_id,
                )
            time.sleep(min(self.poll_interval_s, remaining))
            polls += 1
            try:
                reply = self._api("GET", f"{TRACKS_PATH}/{track_id}")
            except (RateLimited, TransientError) as exc:
                last = f"last poll: {exc.message}"
                pause = min(exc.retry_after or 0.0, max(0.0, deadline - time.monotonic()))
                time.sleep(pause)
                continue
            data = reply.get("data") if isinstance(reply, dict) else None
            state = _generation_state(data if isinstance(data, dict) else {})
            last = f"status {state[0]!r}" if state[0] else "no generation yet"

    def _download(self, track_id: str, url: str) -> tuple[bytes, int]:
        """The WAV at ``url`` as mono 16-bit PCM and its sample rate."""
        try:
            response = self._files.get(url)
        except httpx.TimeoutException as exc:
            raise TransientError(
                f"track {track_id}: the download took over {self.timeout_s:g} s "
                f"({type(exc).__name__})",
                provider=self.name,
                request_id=track_id,
            ) from None
        except httpx.TransportError as exc:
            raise TransientError(
                f"track {track_id}: the download failed: {scrub(str(exc), self._secrets)}",
                provider=self.name,
                request_id=track_id,
            ) from None
        if response.status_code != 200:
            # A link past its expired_at, or the file host's hiccup: the track is still
            # Mubert's, and asking for it again mints a fresh link.
            raise TransientError(
                f"track {track_id}: the download answered HTTP {response.status_code}",
                provider=self.name,
                status=response.status_code,
                request_id=track_id,
            )
        return _mono_pcm(response.content, track_id, self.name)

    # --- one API request -----------------------------------------------------------

    def _api(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON of a 200 reply, or our error for anything else."""
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise TransientError(
                f"no reply within {self.timeout_s:g} s ({type(exc).__name__})", provider=self.name
            ) from None
        except httpx.TransportError as exc:
            raise TransientError(
                f"could not reach {self.base_url}: {scrub(str(exc), self._secrets)}",
                provider=self.name,
            ) from None
        if response.status_code != 200:
            raise self._error(response)
        try:
            return response.json()
        except ValueError:
            raise TransientError(
                f"Mubert answered {method} {path} with something other than JSON",
                provider=self.name,
            ) from None

    def _error(self, response: httpx.Response) -> ProviderError:
        """Our error for an error reply. A 403 whose code is about the license (not the
        credentials) gets its own class; everything else is ``classify_status``'s."""
        status = response.status_code
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        detail = error_detail(body)
        description = body.get("description") if isinstance(body, dict) else None
        message = "; ".join(
            part for part in (detail.message, str(description or "")) if part.strip()
        )
        refusal = LICENSE_REFUSALS.get(detail.code) if status == 403 else None
        if refusal is not None:
            cls, meaning = refusal
            hint = {
                BadRequest: "change the request or the license",
                QuotaExhausted: "renew or raise the license, or choose another music provider",
                RateLimited: "wait for a track to finish",
            }[cls]
            return cls(
                f"{meaning} ({scrub(message, self._secrets) or detail.code}): {hint}",
                provider=self.name,
                status=status,
                provider_code=detail.code,
            )
        return classify_status(
            status=status,
            body={"error": {"code": detail.code, "message": message}},
            headers=response.headers,
            provider=self.name,
            key_env=KEY_ENV,
            secrets=self._secrets,
        )


def _generation_state(track: dict[str, Any]) -> tuple[str, str]:
    """The status and download link of the track's WAV generation ("" when it has none
    yet). A track may hold several generations (one per format and bitrate asked for)."""
    generations = track.get("generations") or []
    if not isinstance(generations, list):
        return "", ""
    found = [g for g in generations if isinstance(g, dict)]
    wav = [g for g in found if str(g.get("format") or FORMAT).lower() == FORMAT]
    for generation in wav:
        if str(generation.get("status") or "").lower() in READY and generation.get("url"):
            return str(generation["status"]).lower(), str(generation["url"])
    if wav:
        return str(wav[0].get("status") or "").lower(), ""
    return "", ""


def _mono_pcm(data: bytes, track_id: str, provider: str) -> tuple[bytes, int]:
    """``data`` (a WAV file) as 16-bit little-endian mono PCM, its channels averaged."""
    import numpy as np
    import soundfile

    try:
        frames, sample_rate = soundfile.read(io.BytesIO(data), dtype="int16", always_2d=True)
    except (RuntimeError, ValueError, TypeError) as exc:  # LibsndfileError is a RuntimeError
        raise TransientError(
            f"track {track_id}: the download is not a readable WAV file ({exc})",
            provider=provider,
            request_id=track_id,
        ) from None
    if not len(frames):
        raise TransientError(
            f"track {track_id}: the WAV file holds no audio", provider=provider, request_id=track_id
        )
    mono = np.rint(frames.astype(np.float64).mean(axis=1))
    return np.clip(mono, -32768, 32767).astype("<i2").tobytes(), int(sample_rate)


def _seconds(name: str, value: float | str) -> float:
    """A positive number of seconds as configured (the registry passes strings)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return seconds
