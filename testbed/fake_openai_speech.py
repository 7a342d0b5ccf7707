"""A local OpenAI text-to-speech server (``POST /v1/audio/speech``) for tests and benchmarks.

It answers over real HTTP as the API does: it checks the bearer key and the body (model,
voice for that model, input length, response format, speed range), and returns a
deterministic tone as 24 kHz 16-bit mono PCM, longer for a longer line and shorter when
read faster, with the API's headers. Failures are scripted one per request, their bodies
and headers reconstructed from OpenAI's error-code guide and replies seen in the field.
Every request is recorded (path, headers without the key, JSON body); anything that would
make the real API refuse a request, unscripted, is collected in ``problems``.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from testbed.loopback import LoopbackServer

TEST_API_KEY = "sk-test-speech-0123456789abcdef"
SAMPLE_RATE = 24_000
SECONDS_PER_CHARACTER = 0.06  # at speed 1.0: about 170 words a minute
TONE_HZ = 440.0
MAX_INPUT = 4096
FORMATS = {"mp3", "opus", "aac", "flac", "wav", "pcm"}
# The server's own copy of each model's voices, so a mistake in the adapter's is caught.
_NINE = ("nova", "shimmer", "echo", "onyx", "fable", "alloy", "ash", "sage", "coral")
VOICES = {
    "tts-1": _NINE,
    "tts-1-hd": _NINE,
    "gpt-4o-mini-tts": (*_NINE, "ballad", "verse", "marin", "cedar"),
    "gpt-4o-mini-tts-2025-12-15": (*_NINE, "ballad", "verse", "marin", "cedar"),
}
INSTRUCTED = {"gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15"}


@dataclass(frozen=True)
class Failure:
    """One scripted error reply."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _error(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _masked(key: str) -> str:
    """How OpenAI quotes a refused key: its start and last four characters."""
    return f"{key[:3]}{'*' * max(0, len(key) - 7)}{key[-4:]}" if len(key) > 7 else key


def invalid_api_key(key: str = "sk-wrong-key-000000000000") -> Failure:
    return Failure(
        401,
        _error(
            f"Incorrect API key provided: {_masked(key)}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        ),
    )


def invalid_voice(model: str = "tts-1") -> Failure:
    return Failure(400, _voice_error(model, "ballad"))


def rate_limited(*, retry_after: str | None = "2", reset_requests: str = "2s") -> Failure:
    headers = {
        "x-ratelimit-limit-requests": "50",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": reset_requests,
    }
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return Failure(
        429,
        _error(
            "Rate limit reached for tts-1-hd in organization org-fake on requests per min "
            "(RPM): Limit 50, Used 50, Requested 1. Please try again in "
            f"{reset_requests}. Visit https://platform.openai.com/account/rate-limits to "
            "learn more.",
            "requests",
            "rate_limit_exceeded",
        ),
        headers,
    )


def insufficient_quota() -> Failure:
    return Failure(
        429,
        _error(
            "You exceeded your current quota, please check your plan and billing details. "
            "For more information on this error, read the docs: "
            "https://platform.openai.com/docs/guides/error-codes/api-errors.",
            "insufficient_quota",
            "insufficient_quota",
        ),
    )


def server_error() -> Failure:
    return Failure(
        500,
        _error(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
    )


def _voice_error(model: str, voice: str) -> dict:
    """The API's refusal of a voice its model lacks: a validation error as the message."""
    allowed = VOICES.get(model, _NINE)
    expected = ", ".join(f"'{v}'" for v in allowed[:-1]) + f" or '{allowed[-1]}'"
    detail = [
        {
            "type": "enum",
            "loc": ("body", "voice"),
            "msg": f"Input should be {expected}",
            "input": voice,
        }
    ]
    return _error(str(detail), "invalid_request_error", None)


def tone(characters: int, speed: float = 1.0) -> bytes:
    """The audio the server reads ``characters`` as: a 440 Hz tone, 60 ms a character."""
    samples = max(1, round(characters * SECONDS_PER_CHARACTER / speed * SAMPLE_RATE))
    t = np.arange(samples, dtype=np.float64) / SAMPLE_RATE
    return (np.sin(2 * np.pi * TONE_HZ * t) * 0.3 * 32767).astype("<i2").tobytes()


class FakeOpenAISpeechServer(LoopbackServer):
    """Start with ``start()``; ``base_url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, host: str = "127.0.0.1", api_key: str = TEST_API_KEY) -> None:
        self.api_key = api_key
        self.delay = 0.0  # seconds before every reply (a slow provider, load benchmarks)
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"} per request
        self.problems: list[str] = []
        self._failures: deque[Failure] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [request["body"] for request in self.requests]

    def fail(self, *failures: Failure) -> FakeOpenAISpeechServer:
        """Answer the next requests with these errors, one each, in order."""
        with self._lock:
            self._failures.extend(failures)
        return self

    def verify(self) -> list[str]:
        """Every problem seen, and scripted failures no request consumed."""
        with self._lock:
            problems = list(self.problems)
            if self._failures:
                problems.append(f"{len(self._failures)} scripted failure(s) never requested")
        return problems

    def settings(self) -> dict[str, dict[str, str]]:
        """``settings.ADSTUDIO_SPEECH_PROVIDERS`` pointing openai at this server."""
        return {"openai": {"api_key": self.api_key, "base_url": self.base_url}}

    # --- serving (called from handler threads) -------------------------------------

    def _record(self, path: str, headers: dict[str, str], body: Any) -> int:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            return len(self.requests)

    def _next_failure(self) -> Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOpenAISpeechServer

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

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        number = fake._record(self.path, headers, body)
        if fake.delay and fake._stopping.wait(fake.delay):
            return
        if self.path.rstrip("/") != "/v1/audio/speech":
            fake._problem(f"request {number}: no route {self.path}")
            self._json(
                404, _error(f"Invalid URL (POST {self.path})", "invalid_request_error", None)
            )
            return
        if self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            given = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            failure = invalid_api_key(given)
            self._json(failure.status, failure.body)
            return
        failure = fake._next_failure()
        if failure is not None:
            self._json(failure.status, failure.body, failure.headers)
            return
        refusal = _refusal(body)
        if refusal is not None:
            fake._problem(f"request {number}: {refusal[1]['error']['message']}")
            self._json(*refusal)
            return
        if body.get("instructions") and body["model"] not in INSTRUCTED:
            # The API accepts them and reads the line as if they were not there.
            fake._problem(
                f"request {number}: instructions sent to {body['model']}, which ignores them"
            )
        audio = tone(len(body["input"]), float(body.get("speed", 1.0)))
        self._audio(audio, number)

    def _audio(self, audio: bytes, number: int) -> None:
        """The PCM, chunked, as the API streams it."""
        self.send_response(200)
        self.send_header("Content-Type", "audio/pcm")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", f"req_fake_speech_{number:06d}")
        self.send_header("openai-processing-ms", "212")
        self.send_header("openai-version", "2020-10-01")
        self.send_header("openai-organization", "org-fake")
        self.end_headers()
        try:
            for start in range(0, len(audio), 65536):
                piece = audio[start : start + 65536]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_fake_speech_err_{status}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def _refusal(body: Any) -> tuple[int, dict] | None:
    """The API's answer to a body it refuses, or None for a valid one."""
    if not isinstance(body, dict):
        return 400, _error(
            "We could not parse the JSON body of your request.", "invalid_request_error", None
        )
    model = body.get("model")
    if model not in VOICES:
        return 404, _error(
            f"The model `{model}` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        )
    text = body.get("input")
    if not isinstance(text, str) or not text:
        return 400, _error("Input should be a valid string", "invalid_request_error", None)
    if len(text) > MAX_INPUT:
        return 400, _error(
            f"[{{'type': 'string_too_long', 'loc': ('body', 'input'), 'msg': 'String should "
            f"have at most {MAX_INPUT} characters', 'ctx': {{'max_length': {MAX_INPUT}}}}}]",
            "invalid_request_error",
            None,
        )
    if body.get("voice") not in VOICES[model]:
        return 400, _voice_error(model, str(body.get("voice")))
    if body.get("response_format", "mp3") not in FORMATS:
        return 400, _error("Invalid response_format", "invalid_request_error", None)
    if body.get("response_format") != "pcm":
        return 400, _error("this fake serves pcm only", "invalid_request_error", None)
    speed = body.get("speed", 1.0)
    if not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
        return 400, _error(
            "Input should be greater than or equal to 0.25 and less than or equal to 4",
            "invalid_request_error",
            None,
            "speed",
        )
    return None
