"""A local ElevenLabs server for tests and benchmarks, speaking its wire format over real
HTTP: ``POST /v1/text-to-speech/{voice_id}`` answered with a deterministic tone in the
requested PCM format, and ``GET /v1/voices`` with a small listing in the API's shape.

What it takes from the API reference (POST /v1/text-to-speech/{voice_id}, the OpenAPI
document of elevenlabs-docs; the "Error messages" and "Errors" pages; the request-stitching
cookbook): the ``xi-api-key`` header, the ``output_format`` query values, the JSON body's
fields, the ``request-id`` and ``character-cost`` response headers, error bodies as
``{"detail": {"status": ..., "message": ...}}`` and 422s as FastAPI's list of
``{"loc", "msg", "type"}``. The codes and statuses of the canned failures are the
documented ones; their message texts and the tone are this server's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import struct
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from testbed.loopback import LoopbackServer

TEST_API_KEY = "xi-test-fake-0123456789abcdef"
VOICE_ID = "21m00Tcm4TlvDq8ikWAM"  # Rachel, the voice id of the API reference's examples
SAMPLE_RATE = 24_000
CHARACTERS_PER_SECOND = 15.0  # the tone lasts as long as reading the text would, roughly
TONE_HZ = 400  # a whole number of samples per period at every PCM rate served below

# The PCM formats of the output_format enum, with their sample rates.
PCM_FORMATS = {f"pcm_{rate}": rate for rate in (8000, 16000, 22050, 24000, 44100, 48000)}
OUTPUT_FORMATS = {
    *PCM_FORMATS,
    "mp3_22050_32",
    "mp3_44100_32",
    "mp3_44100_64",
    "mp3_44100_96",
    "mp3_44100_128",
    "mp3_44100_192",
    "ulaw_8000",
    "alaw_8000",
    "opus_48000_32",
    "opus_48000_64",
    "opus_48000_96",
    "opus_48000_128",
    "opus_48000_192",
}


@dataclass(frozen=True)
class FakeReply:
    """One scripted answer to a text-to-speech request: a success with ``headers`` laid
    over the usual ones (a value of None removes that header), or an error (status >= 400)
    with ``body`` (JSON data, or text sent as text/plain)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str | None] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (past the client's timeout = a timeout)
    content_type: str | None = None  # a success's own (default audio/pcm)
    audio: bytes | None = None  # a success's body instead of the tone


def error_reply(
    status: int, body: Any, *, headers: dict[str, str | None] | None = None, delay: float = 0.0
) -> FakeReply:
    return FakeReply(status=status, body=body, headers=headers or {}, delay=delay)


def detail(status: str, message: str) -> dict[str, Any]:
    """An error body as ElevenLabs sends it: ``{"detail": {"status": ..., "message": ...}}``."""
    return {"detail": {"status": status, "message": message}}


# The failures the docs list for this endpoint ("Error messages": 400/401, 403, 429).
INVALID_API_KEY = error_reply(401, detail("invalid_api_key", "Invalid API key"))
QUOTA_EXCEEDED = error_reply(
    401, detail("quota_exceeded", "You have insufficient quota to complete this request.")
)
VOICE_NOT_FOUND = error_reply(400, detail("voice_not_found", "A voice with that id was not found."))


def too_many_concurrent_requests(retry_after: str | None = None) -> FakeReply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    message = "Too many concurrent requests for your subscription; wait for one to finish."
    return error_reply(429, detail("too_many_concurrent_requests", message), headers=headers)


def system_busy(retry_after: str | None = None) -> FakeReply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    message = "Our services are experiencing high levels of traffic; try again later."
    return error_reply(429, detail("system_busy", message), headers=headers)


def validation_error(location: list[str | int], message: str, kind: str) -> FakeReply:
    """A 422 as the API's FastAPI validation sends it."""
    return error_reply(422, {"detail": [{"loc": location, "msg": message, "type": kind}]})


# What a server error looks like from the framework (500) or a load balancer (503).
INTERNAL_ERROR = error_reply(500, "Internal Server Error")
SERVICE_UNAVAILABLE = error_reply(503, "Service Unavailable")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as it arrived, the key header left out (``key_sent`` says whether it
    was the right one)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    key_sent: bool

    @property
    def voice_id(self) -> str:
        prefix = "/v1/text-to-speech/"
        return self.path[len(prefix) :] if self.path.startswith(prefix) else ""


def tone(text: str, *, sample_rate: int = SAMPLE_RATE, speed: float = 1.0) -> bytes:
    """The audio the server reads ``text`` as: a 400 Hz tone, 16-bit little-endian mono,
    ``len(text) / 15 / speed`` seconds long (at least one period)."""
    period = sample_rate // TONE_HZ
    one = b"".join(
        struct.pack("<h", round(8000 * math.sin(2 * math.pi * i / period))) for i in range(period)
    )
    samples = max(period, round(len(text) / CHARACTERS_PER_SECOND / speed * sample_rate))
    repeats = -(-samples // period)
    return (one * repeats)[: samples * 2]


VOICES = [
    {
        "voice_id": VOICE_ID,
        "name": "Rachel",
        "category": "premade",
        "labels": {
            "accent": "american",
            "descriptive": "calm",
            "age": "young",
            "gender": "female",
            "language": "en",
            "use_case": "narrative_story",
        },
        "description": "Matter-of-fact, personable woman.",
        "preview_url": "https://storage.example.com/premade/rachel.mp3",
        "available_for_tiers": [],
        "settings": None,
        "high_quality_base_model_ids": ["eleven_multilingual_v2", "eleven_flash_v2_5"],
        "verified_languages": [
            {
                "language": "en",
                "model_id": "eleven_multilingual_v2",
                "accent": "american",
                "locale": "en-US",
                "preview_url": "https://storage.example.com/premade/rachel-en.mp3",
            }
        ],
        "is_owner": False,
        "is_legacy": False,
        "is_mixed": False,
    },
    {
        "voice_id": "th4iVoiceNiranXyZ123",
        "name": "Niran",
        "category": "professional",
        "labels": {
            "accent": "central",
            "descriptive": "deep",
            "age": "middle_aged",
            "gender": "male",
            "use_case": "advertisement",
        },
        "description": "A warm Thai voice for adverts.",
        "preview_url": "https://storage.example.com/professional/niran.mp3",
        "available_for_tiers": ["creator", "pro"],
        "settings": {
            "stability": 0.5,
            "similarity_boost": 0.75,
            "style": 0.0,
            "use_speaker_boost": True,
            "speed": 1.0,
        },
        "high_quality_base_model_ids": ["eleven_multilingual_v2"],
        "verified_languages": [
            {
                "language": "th",
                "model_id": "eleven_multilingual_v2",
                "accent": "central",
                "locale": "th-TH",
                "preview_url": None,
            }
        ],
        "is_owner": False,
        "is_legacy": False,
        "is_mixed": False,
    },
]


class FakeElevenLabsServer(LoopbackServer):
    """Start with ``start()``; ``base_url`` is ``http://127.0.0.1:PORT``, the API's root as
    the SDK takes it (``https://api.elevenlabs.io``)."""

    def __init__(self, *, api_key: str = TEST_API_KEY, host: str = "127.0.0.1") -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.delay = 0.0  # seconds added before every answer (benchmarks: 0.3)
        self.voices: list[dict[str, Any]] = [dict(v) for v in VOICES]
        self._script: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # --- lifecycle -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # --- scripting and reading -----------------------------------------------------

    def script(self, *replies: FakeReply) -> FakeElevenLabsServer:
        """Answer the next text-to-speech requests with ``replies``, in order; after them,
        each request is read as usual."""
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def speech_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.voice_id]

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"{len(self.requests)} of {count} requests after {timeout} s")

    def verify(self) -> list[str]:
        with self._lock:
            return (
                [f"{len(self._script)} scripted reply(s) never requested"] if self._script else []
            )

    def provider_settings(self, api_key: str | None = None) -> dict[str, dict[str, str]]:
        """``settings.ADSTUDIO_SPEECH_PROVIDERS`` pointing elevenlabs at this server."""
        return {"elevenlabs": {"api_key": api_key or self.api_key, "base_url": self.base_url}}

    # --- serving (called from handler threads) -------------------------------------

    def _record(self, request: RecordedRequest) -> int:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()
            return len(self.requests)

    def _next_reply(self) -> FakeReply | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def _request_id(self, number: int) -> str:
        # 20 characters like the API's ids, the same for the same request number.
        return hashlib.sha256(f"fake-{number}".encode()).hexdigest()[:20]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    fake: FakeElevenLabsServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (its timeout) is normal here, not noise."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "xi-api-key"}
        sent_key = self.headers.get("xi-api-key")
        request = RecordedRequest(
            method=method,
            path=url.path,
            query={k: v[-1] for k, v in parse_qs(url.query).items()},
            headers=headers,
            body=body,
            key_sent=sent_key == fake.api_key,
        )
        number = fake._record(request)
        request_id = fake._request_id(number)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if method == "GET" and url.path.rstrip("/") == "/v1/voices":
                self._voices(request, request_id)
            elif method == "POST" and request.voice_id and "/" not in request.voice_id:
                self._speech(request, request_id)
            else:
                self._json(404, {"detail": "Not Found"}, {"request-id": request_id})

    def _voices(self, request: RecordedRequest, request_id: str) -> None:
        if not request.key_sent:
            self._error(INVALID_API_KEY, request_id)
            return
        self._json(200, {"voices": self.server.fake.voices}, {"request-id": request_id})

    def _speech(self, request: RecordedRequest, request_id: str) -> None:
        fake = self.server.fake
        reply = fake._next_reply() or FakeReply()
        wait = fake.delay + reply.delay
        if wait and fake._stopping.wait(wait):
            return
        if reply.status >= 400:
            self._error(reply, request_id)
            return
        if not request.key_sent:
            self._error(INVALID_API_KEY, request_id)
            return
        problem = _validation_problem(request)
        if problem is not None:
            self._error(problem, request_id)
            return
        body = request.body
        output_format = request.query.get("output_format", "mp3_44100_128")
        if output_format not in PCM_FORMATS:
            # Only the PCM formats are synthesised here; the others are real formats the
            # fake does not encode.
            self._error(
                validation_error(["query", "output_format"], "not served", "enum"), request_id
            )
            return
        speed = float((body.get("voice_settings") or {}).get("speed") or 1.0)
        audio = tone(body["text"], sample_rate=PCM_FORMATS[output_format], speed=speed)
        if reply.audio is not None:
            audio = reply.audio
        headers: dict[str, str | None] = {
            "request-id": request_id,
            # Credits charged: one a character (the multilingual models' rate).
            "character-cost": str(len(body["text"])),
        }
        headers.update(reply.headers)
        # The docs name no content type for PCM; the adapter reads none beyond refusing
        # JSON and text.
        self._send(200, audio, reply.content_type or "audio/pcm", headers)

    def _error(self, reply: FakeReply, request_id: str) -> None:
        headers: dict[str, str | None] = {"request-id": request_id, **reply.headers}
        if isinstance(reply.body, str):
            self._send(reply.status, reply.body.encode(), "text/plain; charset=utf-8", headers)
        else:
            self._json(reply.status, reply.body, headers)

    def _json(self, status: int, payload: Any, headers: dict[str, str | None]) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self, status: int, payload: bytes, content_type: str, headers: dict[str, str | None]
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            if value is not None:
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def _validation_problem(request: RecordedRequest) -> FakeReply | None:
    """The 422 the API's validation would send for this body, if any."""
    body = request.body
    if not isinstance(body, dict):
        return validation_error(["body"], "Input should be a valid dictionary", "dict_type")
    if not isinstance(body.get("text"), str):
        return validation_error(["body", "text"], "Field required", "missing")
    output_format = request.query.get("output_format")
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        return validation_error(["query", "output_format"], "Input should be a format", "enum")
    settings = body.get("voice_settings")
    if settings is not None and not isinstance(settings, dict):
        return validation_error(
            ["body", "voice_settings"], "Input should be an object", "dict_type"
        )
    return None
