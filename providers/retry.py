"""The one retry policy for provider calls: bounded attempts and total time, exponential
backoff with jitter, and the server's own wait hint when it gives one.

The wait hint is read from ``retry-after-ms``, then ``Retry-After``, then a hint in the body
("try again in 1.146s", Gemini's ``retryDelay``), then ``x-ratelimit-reset-*`` durations.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from django.conf import settings

from providers.base import ProviderError

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|h|m|s)", re.IGNORECASE)
_BODY_HINTS = (
    # OpenAI: "Please try again in 1.146s." / "try again in 20ms" / "in 6m0s"
    re.compile(r"try again in\s+((?:\d+(?:\.\d+)?\s*(?:ms|h|m|s)\s*)+)", re.IGNORECASE),
    re.compile(r"try again in\s+(\d+(?:\.\d+)?)\s*seconds?", re.IGNORECASE),
    re.compile(r"retry after\s+(\d+(?:\.\d+)?)\s*seconds?", re.IGNORECASE),
    # Gemini: {"@type": "...RetryInfo", "retryDelay": "6s"}
    re.compile(r"\"retryDelay\"\s*:\s*\"([^\"]+)\""),
)
_RESET_HEADERS = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")


def parse_duration(text: str) -> float | None:
    """Seconds in a duration such as ``1.5``, ``20ms``, ``1.146s``, ``6m0s``, ``1h2m``."""
    text = text.strip().lower()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or _DURATION_PART.sub("", text).strip(" ,"):
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit.lower()] for number, unit in parts)


def retry_after(headers: Mapping[str, str], body: Any = None) -> float | None:
    """The wait, in seconds, a provider asked for, or None when it gave no hint."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    if "retry-after" in lowered:
        seconds = _retry_after_header(lowered["retry-after"])
        if seconds is not None:
            return seconds
    hint = _body_hint(body)
    if hint is not None:
        return hint
    return _ratelimit_reset(lowered)


def _retry_after_header(value: str) -> float | None:
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _body_hint(body: Any) -> float | None:
    if body is None:
        return None
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    for pattern in _BODY_HINTS:
        match = pattern.search(text)
        if match:
            seconds = parse_duration(match.group(1))
            if seconds is not None:
                return seconds
    return None


def _ratelimit_reset(headers: Mapping[str, str]) -> float | None:
    """OpenAI's reset durations: the exhausted limit's (remaining 0), else the sooner one."""
    exhausted, others = [], []
    for name in _RESET_HEADERS:
        if name not in headers:
            continue
        seconds = parse_duration(headers[name])
        if seconds is None:
            continue
        remaining = headers.get(name.replace("reset", "remaining"), "")
        (exhausted if remaining.strip() == "0" else others).append(seconds)
    if exhausted:
        return max(exhausted)
    return min(others) if others else None


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3  # per provider, first attempt included
    max_total_seconds: float = 60.0  # per provider: time spent in attempts and waits
    base_delay: float = 0.5
    max_delay: float = 20.0  # cap of the computed backoff (a server's hint is not capped)
    jitter: float = 0.2  # +/- fraction of the backoff

    @classmethod
    def from_settings(cls) -> RetryPolicy:
        config = getattr(settings, "ADSTUDIO_PROVIDER_RETRY", {}) or {}
        return cls(**{k: v for k, v in config.items() if k in cls.__dataclass_fields__})

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Exponential backoff for the wait after failed attempt ``attempt`` (1-based)."""
        delay = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, delay * (1 + spread))

    def delay_for(
        self, error: ProviderError, attempt: int, rng: random.Random | None = None
    ) -> float:
        hint = getattr(error, "retry_after", None)
        if hint is not None:
            return float(hint)
        return self.backoff(attempt, rng)

    def next_delay(
        self, error: ProviderError, *, attempt: int, spent: float, rng: random.Random | None = None
    ) -> float | None:
        """The wait before another attempt, or None when this provider should be given up."""
        if not error.retryable or attempt >= self.max_attempts:
            return None
        delay = self.delay_for(error, attempt, rng)
        if spent + delay > self.max_total_seconds:
            return None
        return delay
