"""A render's lines read by their cast voices: each voice track whose catalogue voice
belongs to a configured speech provider is read by it (from the cache when read before),
the others by the guide voice, each saying why. Lines are read concurrently, bounded
(``ADSTUDIO_SPEECH_CONCURRENCY``), each with the providers' one retry policy
(``providers.retry``); a line whose provider still fails is read by the guide voice, and
the render says so. What a render will cost is known before it starts (``estimate``).

No failover between providers: a voice id is one provider's, and another provider's voice
would be another person speaking. The guide voice is the fallback, and it says it is one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from providers.base import ProviderError
from providers.retry import RetryPolicy
from speech import cache, registry
from speech.base import SAMPLE_RATE, SpeechRequest, SpeechResult
from speech.pricing import speech_cost

logger = logging.getLogger(__name__)

GUIDE = "guide"


@dataclass(frozen=True)
class CastVoice:
    """What the catalogue says of a cast voice that its provider needs."""

    provider: str
    provider_voice_id: str
    locale: str = ""
    settings: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Line:
    """One voice track: the request its provider would be sent, or None and why the guide
    voice reads it (``note``)."""

    track_id: str
    request: SpeechRequest | None
    note: str = ""

    @property
    def provider(self) -> str:
        return self.request.provider if self.request else ""


@dataclass(frozen=True)
class LineRead:
    """A line as read: by its provider (``audio``: PCM at ``SAMPLE_RATE``) or by the guide
    voice (no audio; ``note`` says why). ``characters`` and ``cost_usd`` are what this
    reading was billed: 0 from the cache."""

    track_id: str
    reader: str  # the provider's name, or "guide"
    audio: bytes = b""
    sample_rate: int = SAMPLE_RATE
    note: str = ""
    warning: str = ""  # a provider that failed: the render's warnings say it
    characters: int = 0
    cost_usd: Decimal = Decimal(0)
    cost_exact: bool = True
    cached: bool = False
    request_id: str = ""


class SpeechWatch(Protocol):
    """Watches one attempt (the caller's traces and metrics): a context manager whose value
    is handed the result and its cost with ``finish(result, cost_usd)``."""

    def __call__(self, provider: str, request: SpeechRequest) -> AbstractContextManager[Any]: ...


class _Unwatched:
    def __enter__(self) -> _Unwatched:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def finish(self, result: SpeechResult, cost_usd: float = 0.0) -> None:
        return None


def unwatched(provider: str, request: SpeechRequest) -> _Unwatched:
    return _Unwatched()


def lines_of(
    tracks: Iterable[Mapping[str, Any]], *, language: str, cast: Mapping[str, CastVoice]
) -> list[Line]:
    """Each track's line: ``cast`` maps a track's ``voiceId`` to its catalogue voice."""
    lines = []
    for track in tracks:
        track_id = str(track.get("id", ""))
        voice = cast.get(str(track.get("voiceId", "")))
        if voice is None:
            lines.append(Line(track_id, None, "guide voice: not a voice of the catalogue"))
            continue
        label = registry.provider_label(voice.provider)
        if voice.provider not in registry.SPEECH_PROVIDER_NAMES:
            lines.append(Line(track_id, None, f"guide voice: no speech adapter for {label}"))
            continue
        if not registry.is_configured(voice.provider):
            lines.append(Line(track_id, None, f"guide voice: {label} not configured"))
            continue
        request = SpeechRequest(
            provider=voice.provider,
            voice_id=voice.provider_voice_id,
            text=str(track.get("text", "")),
            language=language,
            locale=voice.locale,
            speed=float(track.get("speed") or 1.0),
            model=registry.model_for(voice.provider),
            settings=dict(voice.settings or {}),
        )
        lines.append(Line(track_id, request))
    return lines


def read_line(
    line: Line,
    *,
    watch: SpeechWatch = unwatched,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    stopped: threading.Event | None = None,
) -> LineRead:
    """The line read: from the cache, else by its provider with retries, else by the guide
    voice with a warning naming the provider's last error. Once ``stopped`` is set no
    attempt begins and no retry waits."""
    request = line.request
    if request is None:
        return LineRead(line.track_id, GUIDE, note=line.note)
    audio = cache.cached_audio(request)
    if audio is not None:
        return LineRead(line.track_id, request.provider, audio=audio, cached=True)
    label = registry.provider_label(request.provider)
    try:
        result, cost = _read(
            request,
            watch=watch,
            policy=policy or RetryPolicy.from_settings(),
            sleep=sleep if stopped is None else stopped.wait,
            stopped=stopped,
        )
    except Stopped:
        return LineRead(line.track_id, GUIDE, note="guide voice: the render stopped")
    except ProviderError as error:
        logger.warning("%s: %s could not read the line: %s", line.track_id, label, error)
        return LineRead(
            line.track_id,
            GUIDE,
            note=f"guide voice: {label} failed",
            warning=(
                f"{line.track_id}: read by the guide voice, {label} failed ({error.code}: {error})"
            ),
        )
    cache.cache_store(request, result.audio)
    return LineRead(
        line.track_id,
        request.provider,
        audio=result.audio,
        sample_rate=result.sample_rate,
        characters=result.characters,
        cost_usd=cost.usd,
        cost_exact=cost.exact,
        request_id=result.request_id,
    )


class Stopped(Exception):
    """The render stopped reading (its claim lost): no attempt begins."""


def _read(
    request: SpeechRequest,
    *,
    watch: SpeechWatch,
    policy: RetryPolicy,
    sleep: Callable[[float], object],
    stopped: threading.Event | None,
):
    provider = registry.speech_provider(request.provider)
    if provider is None:  # configured when the lines were made, not now
        raise ProviderError(f"{registry.provider_label(request.provider)} is not configured")

    def attempt():
        with watch(request.provider, request) as call:
            result = provider.synthesize(request)
            cost = speech_cost(
                provider=request.provider, model=result.model, characters=result.characters
            )
            call.finish(result, float(cost.usd))
        return result, cost

    return with_retries(attempt, policy=policy, sleep=sleep, stopped=stopped)


def with_retries[T](
    attempt: Callable[[], T],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], object],
    stopped: threading.Event | None,
) -> T:
    """``attempt()`` until it succeeds or the policy gives it up (its last error raised);
    ``Stopped`` once ``stopped`` is set, before an attempt begins."""
    spent, tries = 0.0, 0
    while True:
        if stopped is not None and stopped.is_set():
            raise Stopped
        tries += 1
        started = time.monotonic()
        try:
            return attempt()
        except ProviderError as error:
            spent += time.monotonic() - started
            delay = policy.next_delay(error, attempt=tries, spent=spent)
            if delay is None:
                raise
            sleep(delay)
            spent += delay


def gather[T](
    jobs: list[Callable[..., T]],
    *,
    workers: int,
    progress: Callable[[], None] | None = None,
    every_s: float = 1.0,
) -> list[T]:
    """Each job's result, in order: ``job(stopped=event)`` run on at most ``workers``
    threads, ``progress`` called from this thread at least every ``every_s`` meanwhile. When
    ``progress`` raises, the event is set (no job begins an attempt or waits to retry)
    and the jobs not begun are dropped; those in flight end with their request."""
    if not jobs:
        return []
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="speech")
    stopped = threading.Event()
    try:
        order = {pool.submit(job, stopped=stopped): n for n, job in enumerate(jobs)}
        results: dict[int, T] = {}
        pending: set[Future] = set(order)
        while pending:
            done, pending = wait(pending, timeout=every_s, return_when=FIRST_COMPLETED)
            for future in done:
                results[order[future]] = future.result()
            if progress is not None:
                progress()
        return [results[n] for n in range(len(jobs))]
    finally:
        stopped.set()
        pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True)
class Estimate:
    """What reading the lines will bill: characters and dollars of the lines not cached,
    ``exact`` when every one of them has a price."""

    characters: int
    cost_usd: Decimal
    exact: bool
    lines: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        return {
            "characters": self.characters,
            "costUsd": str(self.cost_usd),
            "costExact": self.exact,
            "lines": self.lines,
        }


def estimate(lines: Iterable[Line]) -> Estimate:
    """The cost of reading ``lines`` now: each provider bills the characters of the text
    (``speech.pricing``); cached lines and the guide voice's cost nothing."""
    total, characters, exact, shown = Decimal(0), 0, True, []
    for line in lines:
        entry: dict[str, Any] = {"track": line.track_id, "reader": line.provider or GUIDE}
        if line.request is None:
            entry.update(characters=0, costUsd="0", cached=False, note=line.note)
        elif cache.is_cached(line.request):
            entry.update(characters=0, costUsd="0", cached=True)
        else:
            count = len(line.request.text)
            cost = speech_cost(
                provider=line.request.provider, model=line.request.model, characters=count
            )
            total += cost.usd
            characters += count
            exact = exact and cost.exact
            entry.update(characters=count, costUsd=str(cost.usd), cached=False)
        shown.append(entry)
    return Estimate(characters, total, exact, shown)
