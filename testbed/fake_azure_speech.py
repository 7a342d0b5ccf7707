"""A local Azure AI Speech text-to-speech server for tests and benchmarks.

Real HTTP on loopback, shaped after Microsoft's "Text to speech REST API" reference:
``POST /cognitiveservices/v1`` takes SSML and answers with deterministic PCM (a tone whose
length follows the text and the prosody rate, 24 kHz 16-bit mono) and an ``X-RequestId``;
``GET /cognitiveservices/voices/list`` serves a small listing in the reference's JSON
shape. It refuses what Azure refuses, with the statuses of the reference's table: a missing
or wrong key (401), another Content-Type (415), an unknown output format, a missing
User-Agent, SSML that is not well-formed or not in the SSML namespace, a voice it does not
list (400). Error bodies are empty, as the reference shows none. Failures can be scripted
(``fail``), replies delayed (``delay``); every request is recorded without its key, and a
refused one is also a problem that ``verify()`` reports (the fixture fails the test on it).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
import sys
import threading
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testbed.loopback import LoopbackServer

TEST_AZURE_KEY = "azfake0123456789abcdef0123456789"
KEY_HEADER = "ocp-apim-subscription-key"
SAMPLE_RATE = 24_000
SECONDS_PER_CHARACTER = 0.06  # the tone's length per character of spoken text, at rate 1
_SSML = "{http://www.w3.org/2001/10/synthesis}"
_MSTTS = "{https://www.w3.org/2001/mstts}"
# The reference's "Audio outputs", streaming and non-streaming. Only raw-24khz-16bit-mono-pcm
# is rendered here; another valid one is recorded as a problem (the adapters ask for it).
OUTPUT_FORMATS = frozenset(
    [
        "amr-wb-16000hz",
        "audio-16khz-16bit-32kbps-mono-opus",
        "audio-16khz-32kbitrate-mono-mp3",
        "audio-16khz-64kbitrate-mono-mp3",
        "audio-16khz-128kbitrate-mono-mp3",
        "audio-24khz-16bit-24kbps-mono-opus",
        "audio-24khz-16bit-48kbps-mono-opus",
        "audio-24khz-48kbitrate-mono-mp3",
        "audio-24khz-96kbitrate-mono-mp3",
        "audio-24khz-160kbitrate-mono-mp3",
        "audio-48khz-96kbitrate-mono-mp3",
        "audio-48khz-192kbitrate-mono-mp3",
        "ogg-16khz-16bit-mono-opus",
        "ogg-24khz-16bit-mono-opus",
        "ogg-48khz-16bit-mono-opus",
        "raw-8khz-8bit-mono-alaw",
        "raw-8khz-8bit-mono-mulaw",
        "raw-8khz-16bit-mono-pcm",
        "raw-16khz-16bit-mono-pcm",
        "raw-16khz-16bit-mono-truesilk",
        "raw-22050hz-16bit-mono-pcm",
        "raw-24khz-16bit-mono-pcm",
        "raw-24khz-16bit-mono-truesilk",
        "raw-44100hz-16bit-mono-pcm",
        "raw-48khz-16bit-mono-pcm",
        "webm-16khz-16bit-mono-opus",
        "webm-24khz-16bit-24kbps-mono-opus",
        "webm-24khz-16bit-mono-opus",
        "riff-8khz-8bit-mono-alaw",
        "riff-8khz-8bit-mono-mulaw",
        "riff-8khz-16bit-mono-pcm",
        "riff-22050hz-16bit-mono-pcm",
        "riff-24khz-16bit-mono-pcm",
        "riff-44100hz-16bit-mono-pcm",
        "riff-48khz-16bit-mono-pcm",
    ]
)


def _voice(short_name: str, display: str, gender: str, locale_name: str, **extra: Any) -> dict:
    locale, _, own_name = short_name.rpartition("-")
    return {
        "Name": f"Microsoft Server Speech Text to Speech Voice ({locale}, {own_name})",
        "DisplayName": display,
        "LocalName": extra.pop("LocalName", display),
        "ShortName": short_name,
        "Gender": gender,
        "Locale": locale,
        "LocaleName": locale_name,
        **extra,
        "SampleRateHertz": "24000",
        "VoiceType": "Neural",
        "Status": "GA",
        "WordsPerMinute": "150",
    }


# A few voices in the shape of the reference's sample response.
VOICES: tuple[dict[str, Any], ...] = (
    _voice(
        "en-US-JennyNeural",
        "Jenny",
        "Female",
        "English (United States)",
        StyleList=["assistant", "chat", "customerservice", "newscast", "cheerful", "sad"],
    ),
    _voice(
        "en-US-JennyMultilingualNeural",
        "Jenny Multilingual",
        "Female",
        "English (United States)",
        SecondaryLocaleList=["de-DE", "fr-FR", "th-TH"],
    ),
    _voice("th-TH-PremwadeeNeural", "Premwadee", "Female", "Thai (Thailand)"),
    _voice("th-TH-NiwatNeural", "Niwat", "Male", "Thai (Thailand)"),
    _voice(
        "zh-CN-YunxiNeural",
        "Yunxi",
        "Male",
        "Chinese (Mandarin, Simplified)",
        LocalName="云希",
        StyleList=["narration-relaxed", "cheerful", "sports_commentary"],
        RolePlayList=["Narrator", "YoungAdultMale", "Boy"],
    ),
)


@dataclass(frozen=True)
class Failure:
    """One scripted error reply: ``status`` with ``body`` (text) and ``headers``."""

    status: int
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names, the key's header left out
    body: str
    key_given: bool


class FakeAzureSpeechServer(LoopbackServer):
    """Start with ``start()``; ``base_url`` is ``http://127.0.0.1:PORT`` (the adapter's
    ``base_url``, standing for ``https://REGION.tts.speech.microsoft.com``)."""

    def __init__(self, *, api_key: str = TEST_AZURE_KEY, host: str = "127.0.0.1") -> None:
        self.api_key = api_key
        self.voices: list[dict[str, Any]] = [dict(v) for v in VOICES]
        self.delay = 0.0  # seconds before each synthesis reply (a slow region, benchmarks)
        self.requests: list[RecordedRequest] = []
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
        return f"http://{host}:{port}"

    # --- scripting and reading back -------------------------------------------------

    def fail(
        self,
        status: int,
        *,
        body: str = "",
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> FakeAzureSpeechServer:
        """The next ``times`` syntheses answer ``status`` (after the key is checked):
        ``fail(429, headers={"Retry-After": "2"})``."""
        with self._lock:
            self._failures.extend([Failure(status, body, dict(headers or {}))] * times)
        return self

    @property
    def syntheses(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/cognitiveservices/v1"]

    @property
    def count(self) -> int:
        """Synthesis requests received, refused ones included."""
        return len(self.syntheses)

    def settings(self, api_key: str | None = None) -> dict[str, dict[str, str]]:
        """``settings.ADSTUDIO_SPEECH_PROVIDERS`` pointing azure at this server."""
        return {
            "azure": {
                "api_key": self.api_key if api_key is None else api_key,
                "base_url": self.base_url,
                "region": "westeurope",
            }
        }

    def verify(self) -> list[str]:
        """Every request the fake refused as Azure would, and failures never served."""
        with self._lock:
            problems = list(self.problems)
            if self._failures:
                problems.append(f"{len(self._failures)} scripted failure(s) never served")
        return problems

    # --- serving (handler threads) --------------------------------------------------

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            return next(self._ids)

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)

    def _next_failure(self) -> Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _voice_names(self) -> set[str]:
        return {voice["ShortName"] for voice in self.voices}


def check_ssml(body: str, voices: set[str]) -> tuple[str, float, list[str]]:
    """The spoken text and prosody rate of an SSML document, and what Azure would refuse
    in it."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        return "", 1.0, [f"SSML is not well-formed XML: {exc}"]
    problems = []
    if root.tag != f"{_SSML}speak":
        problems.append(f"root element is {root.tag!r}, not speak in the SSML namespace")
    if root.get("version") != "1.0":
        problems.append(f"speak version is {root.get('version')!r}, not '1.0'")
    if not root.get("{http://www.w3.org/XML/1998/namespace}lang"):
        problems.append("speak has no xml:lang")
    found = root.findall(f"{_SSML}voice")
    if not found:
        problems.append("no voice element")
    for voice in found:
        if voice.get("name") not in voices:
            problems.append(f"unknown voice {voice.get('name')!r}")
    rate = 1.0
    for prosody in root.iter(f"{_SSML}prosody"):
        rate = _rate(prosody.get("rate", ""), problems)
    for express in root.iter(f"{_MSTTS}express-as"):
        if not express.get("style"):
            problems.append("mstts:express-as without a style")
        degree = express.get("styledegree")
        if degree is not None and not 0.01 <= _number(degree) <= 2:
            problems.append(f"styledegree {degree!r} is not a number in 0.01..2")
    text = "".join("".join(voice.itertext()) for voice in found)
    return text, rate, problems


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return math.nan


def _rate(value: str, problems: list[str]) -> float:
    match = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)%", value)
    if match:
        multiplier = 1 + float(match.group(1)) / 100
    else:
        try:
            multiplier = float(value)
        except ValueError:
            problems.append(f"prosody rate {value!r} is not a percentage or a multiplier")
            return 1.0
    if not 0.5 <= multiplier <= 2:
        problems.append(f"prosody rate {value!r} is outside 0.5x..2x")
    return min(max(multiplier, 0.5), 2.0)


def tone(text: str, rate: float = 1.0) -> bytes:
    """Deterministic PCM for ``text``: a 200 Hz tone, SECONDS_PER_CHARACTER a character of
    the text divided by the rate, 16-bit little-endian at 24 kHz."""
    samples = round(len(text) * SECONDS_PER_CHARACTER * SAMPLE_RATE / rate)
    period = b"".join(
        int(8000 * math.sin(2 * math.pi * i / 120)).to_bytes(2, "little", signed=True)
        for i in range(120)
    )
    whole, rest = divmod(samples, 120)
    return period * whole + period[: rest * 2]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeAzureSpeechServer

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

    def _recorded(self, body: str) -> tuple[RecordedRequest, int]:
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != KEY_HEADER}
        given = self.headers.get(KEY_HEADER)
        request = RecordedRequest(
            self.command, self.path, headers, body, key_given=given is not None
        )
        return request, self.server.fake._record(request)

    def _key_ok(self, number: int) -> bool:
        fake = self.server.fake
        if self.headers.get(KEY_HEADER) == fake.api_key:
            return True
        self._send(401, b"", {}, number)
        return False

    def do_GET(self) -> None:
        fake = self.server.fake
        _request, number = self._recorded("")
        if self.path != "/cognitiveservices/voices/list":
            self._send(404, b"", {}, number)
            return
        if not self._key_ok(number):
            return
        payload = json.dumps(fake.voices, ensure_ascii=False).encode()
        self._send(200, payload, {"Content-Type": "application/json; charset=utf-8"}, number)

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        _request, number = self._recorded(body)
        if self.path != "/cognitiveservices/v1":
            fake._problem(f"request {number}: POST to {self.path}")
            self._send(404, b"", {}, number)
            return
        if not self._key_ok(number):
            return
        refused = self._refusal(body)
        if refused is not None:
            status, problems = refused
            for problem in problems:
                fake._problem(f"request {number}: {problem}")
            self._send(status, b"", {}, number)
            return
        text, rate, _ = check_ssml(body, fake._voice_names())
        if fake.delay and fake._stopping.wait(fake.delay):
            return
        failure = fake._next_failure()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if failure is not None:
                self._send(failure.status, failure.body.encode(), failure.headers, number)
            else:
                # The reference names no Content-Type for raw PCM: a neutral one.
                audio = tone(text, rate)
                self._send(200, audio, {"Content-Type": "application/octet-stream"}, number)

    def _refusal(self, body: str) -> tuple[int, list[str]] | None:
        """The status Azure's reference gives for what is wrong with the request, if
        anything is."""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if content_type != "application/ssml+xml":
            return 415, [f"Content-Type {content_type!r}, not application/ssml+xml"]
        problems = []
        output_format = self.headers.get("X-Microsoft-OutputFormat") or ""
        if output_format not in OUTPUT_FORMATS:
            problems.append(f"X-Microsoft-OutputFormat {output_format!r} is not a known format")
        elif output_format != "raw-24khz-16bit-mono-pcm":
            problems.append(f"asked for {output_format}; this fake renders raw 24 kHz PCM only")
        user_agent = self.headers.get("User-Agent") or ""
        if not user_agent or len(user_agent) >= 255:
            problems.append("User-Agent is missing or 255 characters or longer")
        problems.extend(check_ssml(body, self.server.fake._voice_names())[2])
        return (400, problems) if problems else None

    def _send(self, status: int, payload: bytes, headers: dict[str, str], number: int) -> None:
        self.send_response(status)
        names = {name.lower() for name in headers}
        if "content-type" not in names and payload:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-RequestId", f"{number:032x}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
