"""A local Mubert Music API v3 server for tests and benchmarks.

Real HTTP on loopback, shaped after Mubert's OpenAPI document (music-api.mubert.com, "Mubert
AI Music API v3"): ``POST /api/v3/public/tracks`` checks the ``customer-id`` and
``access-token`` headers and the body as ``TrackCreatePublicRequest`` describes it, and
answers ``{"data": TrackPublicResource}``; ``GET /api/v3/public/tracks/{track}`` answers
``{"data": TrackShowPublicResource}`` with one generation that is ``processing`` for
``polls_before_done`` polls, then ``done`` (or ``failed``, see ``finish_with``) with a
download link this server also serves: a deterministic WAV, a chord at the requested length,
44.1 kHz 16-bit stereo whose two channels differ (so a downmix shows).

Refusals carry the reference's statuses and body shape (``{"message", "description",
"code"}``): a missing or wrong credential 401, an unknown track 404 ``TrackNotFound``, a body
the API would refuse 422 (the reference gives 422 no schema: the fake answers with the
``message`` field the others share). Failures can be scripted per step (``fail``), replies
delayed (``delay``); every request is recorded without the credentials, and a refused one
(other than a credential), a download asked with the credentials, or a scripted failure
never served is a problem ``verify()`` reports (the fixture fails the test on it).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import threading
import uuid
import wave
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from testbed.loopback import LoopbackServer

TEST_MUBERT_CUSTOMER_ID = "5f0c9a1e-fake-4c2b-9d7e-customer0001"
TEST_MUBERT_ACCESS_TOKEN = "mbfake-access-token-7e3c1b9a0d4f62e8"
CUSTOMER_HEADER = "customer-id"
TOKEN_HEADER = "access-token"
API_PREFIX = "/api/v3"
TRACKS_PATH = f"{API_PREFIX}/public/tracks"
FILES_PATH = "/files"
SAMPLE_RATE = 44_100
CHORD_HZ = (220.0, 277.18, 329.63)  # A major: the left channel
RIGHT_HZ = 110.0  # the right channel's bass note
STEPS = ("create", "poll", "download")

# TrackCreatePublicRequest's enums (TrackBitrateEnum, TrackFormatEnum, TrackIntensityEnum,
# TrackModeEnum, TrackKeyScaleEnum).
BITRATES = {32, 96, 128, 192, 256, 320}
FORMATS = {"mp3", "wav"}
INTENSITIES = {"low", "medium", "high"}
MODES = {"track", "jingle", "loop", "mix"}
PROMPT_MODES = {"track", "loop"}  # the skills reference: a prompt takes track or loop
NOTES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
KEYS = {f"{note}{minor}" for note in NOTES for minor in ("", "m")}
# The reference types a track's intensity as an integer without saying how the request's
# names map to it; these numbers are the fake's own.
INTENSITY_LEVELS = {"low": 1, "medium": 2, "high": 3}


@dataclass(frozen=True)
class Failure:
    """One scripted error reply: ``status`` with a JSON ``body`` and ``headers``."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names, the credentials' headers left out
    body: str
    customer_given: bool
    token_given: bool


@dataclass
class _Track:
    id: str
    session_id: str
    request: dict[str, Any]
    created_at: str
    polls: int = 0


class FakeMubertServer(LoopbackServer):
    """Start with ``start()``; ``base_url`` is ``http://127.0.0.1:PORT/api/v3`` (the
    adapter's ``base_url``, standing for ``https://music-api.mubert.com/api/v3``)."""

    def __init__(
        self,
        *,
        customer_id: str = TEST_MUBERT_CUSTOMER_ID,
        access_token: str = TEST_MUBERT_ACCESS_TOKEN,
        host: str = "127.0.0.1",
    ) -> None:
        self.customer_id = customer_id
        self.access_token = access_token
        self.polls_before_done = 2  # polls answered "processing" before the track is done
        self.finish_with = "done"  # or "failed": the generation's last status
        self.delay = 0.0  # seconds before each API reply (a slow generation service)
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        self.tracks: dict[str, _Track] = {}
        self._failures: dict[str, deque[Failure]] = {step: deque() for step in STEPS}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}{API_PREFIX}"

    # --- scripting and reading back -------------------------------------------------

    def fail(
        self,
        status: int,
        *,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
        on: str = "create",
    ) -> FakeMubertServer:
        """The next ``times`` requests of step ``on`` (create, poll or download) answer
        ``status`` after the credentials are checked: ``fail(429, headers={"Retry-After":
        "2"})``. ``body`` defaults to the reference's error shape."""
        if on not in STEPS:
            raise ValueError(f"on must be one of {', '.join(STEPS)}, not {on!r}")
        reply = body if body is not None else error_body(f"scripted HTTP {status}", "")
        with self._lock:
            self._failures[on].extend([Failure(status, reply, dict(headers or {}))] * times)
        return self

    def _of(self, method: str, prefix: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path.startswith(prefix)]

    @property
    def creates(self) -> list[RecordedRequest]:
        return [r for r in self._of("POST", TRACKS_PATH) if r.path == TRACKS_PATH]

    @property
    def polls(self) -> list[RecordedRequest]:
        return self._of("GET", TRACKS_PATH + "/")

    @property
    def downloads(self) -> list[RecordedRequest]:
        return self._of("GET", FILES_PATH + "/")

    @property
    def count(self) -> int:
        """API requests received (creates and polls), refused ones included."""
        return len(self.creates) + len(self.polls)

    def settings(self, access_token: str | None = None) -> dict[str, dict[str, str]]:
        """``settings.ADSTUDIO_MUSIC_PROVIDERS`` pointing mubert at this server."""
        return {
            "mubert": {
                "customer_id": self.customer_id,
                "access_token": self.access_token if access_token is None else access_token,
                "base_url": self.base_url,
            }
        }

    def verify(self) -> list[str]:
        """Every request the fake refused as Mubert would (a credential aside), downloads
        asked with the credentials, and failures never served."""
        with self._lock:
            problems = list(self.problems)
            for step, queue in self._failures.items():
                if queue:
                    problems.append(f"{len(queue)} scripted {step} failure(s) never served")
        return problems

    # --- serving (handler threads) --------------------------------------------------

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests)

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)

    def _next_failure(self, step: str) -> Failure | None:
        with self._lock:
            queue = self._failures[step]
            return queue.popleft() if queue else None

    def _create(self, request: dict[str, Any]) -> _Track:
        track = _Track(
            id=str(uuid.uuid4()),
            session_id=uuid.uuid4().hex,
            request=request,
            created_at=_now(),
        )
        with self._lock:
            self.tracks[track.id] = track
        return track

    def _poll(self, track: _Track) -> str:
        """The generation's status at this answered poll (refused polls do not count)."""
        with self._lock:
            track.polls += 1
            return "processing" if track.polls <= self.polls_before_done else self.finish_with

    def _track(self, track_id: str) -> _Track | None:
        with self._lock:
            return self.tracks.get(track_id)


def error_body(message: str, code: str, description: str | None = None) -> dict[str, Any]:
    """An error reply in the shape the reference's exceptions share."""
    return {"message": message, "description": description, "code": code}


def check_create(body: Any) -> list[str]:
    """What Mubert would refuse (422) in a ``POST /public/tracks`` body, per
    ``TrackCreatePublicRequest`` and the skills reference."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = []
    duration = body.get("duration")
    if duration is None:
        problems.append("duration is required")
    elif not _whole(duration):
        problems.append(f"duration {duration!r} is not an integer")
    elif duration < 5:
        problems.append(f"duration {duration} is below the minimum of 5")
    sources = [name for name in ("playlist_index", "prompt", "image") if body.get(name)]
    if not sources:
        problems.append("one of playlist_index, prompt or image is required")
    prompt = body.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, str):
            problems.append("prompt is not a string")
        elif len(prompt) > 255:
            problems.append(f"prompt is {len(prompt)} characters, over the maximum of 255")
        if "bpm" in body or "key" in body:
            problems.append("bpm and key are not allowed with a prompt")
        if body.get("mode", "track") not in PROMPT_MODES:
            problems.append(f"mode {body.get('mode')!r} is not track or loop for a prompt")
    playlist = body.get("playlist_index")
    if playlist is not None and (not isinstance(playlist, str) or len(playlist) > 10):
        problems.append(f"playlist_index {playlist!r} is not a string of at most 10")
    for name, allowed in (
        ("bitrate", BITRATES),
        ("format", FORMATS),
        ("intensity", INTENSITIES),
        ("mode", MODES),
        ("key", KEYS),
    ):
        if name in body and body[name] not in allowed:
            problems.append(f"{name} {body[name]!r} is not one of {sorted(allowed, key=str)}")
    bpm = body.get("bpm")
    if bpm is not None and (
        isinstance(bpm, bool) or not isinstance(bpm, int) or not 1 <= bpm <= 500
    ):
        problems.append(f"bpm {bpm!r} is not an integer in 1..500")
    known = {"playlist_index", "prompt", "image", "bitrate", "duration", "format"}
    known |= {"intensity", "mode", "bpm", "key"}
    problems.extend(f"unknown field {name!r}" for name in body if name not in known)
    return problems


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def track_frames(duration_s: int) -> np.ndarray:
    """The fake's audio for a track of ``duration_s`` seconds: int16 frames of shape
    (samples, 2), a chord on the left and a bass note on the right, 44.1 kHz."""
    t = np.arange(int(duration_s) * SAMPLE_RATE, dtype=np.float64) / SAMPLE_RATE
    left = sum(np.sin(2 * np.pi * f * t) for f in CHORD_HZ) / len(CHORD_HZ)
    right = np.sin(2 * np.pi * RIGHT_HZ * t)
    frames = np.stack([0.5 * left, 0.25 * right], axis=1)
    return np.rint(frames * 32767).astype(np.int16)


def wav_file(frames: np.ndarray) -> bytes:
    """``frames`` (int16, shape (samples, channels)) as a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(frames.shape[1])
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(frames.astype("<i2").tobytes())
    return out.getvalue()


def _now(offset: timedelta = timedelta()) -> str:
    return (datetime.now(UTC) + offset).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def _resource(track: _Track) -> dict[str, Any]:
    """The track as ``TrackPublicResource``."""
    request = track.request
    return {
        "id": track.id,
        "session_id": track.session_id,
        "playlist_index": request.get("playlist_index"),
        "prompt": request.get("prompt"),
        "duration": request["duration"],
        "intensity": INTENSITY_LEVELS[request.get("intensity", "high")],
        "mode": request.get("mode", "track"),
        "key": request.get("key"),
        "bpm": request.get("bpm"),
        "created_at": track.created_at,
    }


def _show(track: _Track, status: str, origin: str) -> dict[str, Any]:
    """The track as ``TrackShowPublicResource``: one generation in the format asked for."""
    request = track.request
    fmt = request.get("format", "mp3")
    done = status == "done"
    generation = {
        "session_id": track.session_id,
        "format": fmt,
        "bitrate": request.get("bitrate", 128),
        "status": status,
        "generated_at": _now() if done else None,
        "expired_at": _now(timedelta(days=1)) if done else None,
        "created_at": track.created_at,
        "url": f"{origin}{FILES_PATH}/{track.id}.{fmt}" if done else None,
    }
    return {**_resource(track), "generations": [generation]}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeMubertServer

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

    def _recorded(self, body: str) -> int:
        secret = {CUSTOMER_HEADER, TOKEN_HEADER}
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in secret}
        request = RecordedRequest(
            self.command,
            self.path,
            headers,
            body,
            customer_given=self.headers.get(CUSTOMER_HEADER) is not None,
            token_given=self.headers.get(TOKEN_HEADER) is not None,
        )
        return self.server.fake._record(request)

    def _credentials_ok(self) -> bool:
        fake = self.server.fake
        if (
            self.headers.get(CUSTOMER_HEADER) == fake.customer_id
            and self.headers.get(TOKEN_HEADER) == fake.access_token
        ):
            return True
        self._json(
            401,
            error_body("Unauthenticated", "Unauthenticated", "Invalid customer-id or access-token"),
        )
        return False

    def _waited(self) -> bool:
        """Sleep the scripted delay; False when the server is stopping meanwhile."""
        fake = self.server.fake
        return not (fake.delay and fake._stopping.wait(fake.delay))

    def _failed(self, step: str) -> bool:
        failure = self.server.fake._next_failure(step)
        if failure is None:
            return False
        self._json(failure.status, failure.body, failure.headers)
        return True

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        number = self._recorded(raw)
        if self.path != TRACKS_PATH:
            fake._problem(f"request {number}: POST to {self.path}")
            self._json(404, error_body("Not found", "NotFound"))
            return
        if not self._credentials_ok():
            return
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            body = json.loads(raw) if content_type == "application/json" else None
        except ValueError:
            body = None
        problems = check_create(body)
        if content_type != "application/json":
            problems.insert(0, f"Content-Type {content_type!r}, not application/json")
        if problems:
            for problem in problems:
                fake._problem(f"request {number}: {problem}")
            self._json(422, {"message": "; ".join(problems)})
            return
        if not self._waited() or self._failed("create"):
            return
        self._json(200, {"data": _resource(fake._create(body))})

    def do_GET(self) -> None:
        fake = self.server.fake
        number = self._recorded("")
        if self.path.startswith(FILES_PATH + "/"):
            self._download(number)
            return
        if not self.path.startswith(TRACKS_PATH + "/"):
            fake._problem(f"request {number}: GET {self.path}")
            self._json(404, error_body("Not found", "NotFound"))
            return
        if not self._credentials_ok():
            return
        track_id = self.path[len(TRACKS_PATH) + 1 :]
        track = fake._track(track_id)
        if track is None:
            fake._problem(f"request {number}: poll of unknown track {track_id!r}")
            self._json(404, {**error_body(f"Track {track_id} not found", "TrackNotFound")})
            return
        if not self._waited() or self._failed("poll"):
            return
        self._json(200, {"data": _show(track, fake._poll(track), fake.origin)})

    def _download(self, number: int) -> None:
        fake = self.server.fake
        if self.headers.get(CUSTOMER_HEADER) or self.headers.get(TOKEN_HEADER):
            fake._problem(f"request {number}: the download link was asked with credentials")
        name = self.path[len(FILES_PATH) + 1 :]
        track_id, _, fmt = name.rpartition(".")
        track = fake._track(track_id)
        if track is None or fmt != "wav" or track.polls <= fake.polls_before_done:
            fake._problem(f"request {number}: download of {name!r}, not a finished WAV track")
            self._send(404, b"", {})
            return
        if self._failed("download"):
            return
        audio = wav_file(track_frames(track.request["duration"]))
        self._send(200, audio, {"Content-Type": "audio/wav"})

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self._send(status, payload, {"Content-Type": "application/json", **(headers or {})})

    def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
