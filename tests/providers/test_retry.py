"""The retry policy: where the wait comes from, backoff bounds, and when to give up."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from providers.base import BadRequest, RateLimited, TransientError
from providers.retry import RetryPolicy, parse_duration, retry_after


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1.5", 1.5),
        ("20ms", 0.02),
        ("1.146s", 1.146),
        ("6m0s", 360.0),
        ("1h2m3s", 3723.0),
        ("", None),
        ("soon", None),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


OPENAI_429_BODY = {
    "error": {
        "message": "Rate limit reached for gpt-4.1-mini in organization org-x on tokens per min "
        "(TPM): Limit 200000, Used 199000, Requested 2400. Please try again in 1.146s.",
        "type": "tokens",
        "code": "rate_limit_exceeded",
    }
}
GEMINI_429_BODY = [
    {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "6s"},
            ],
        }
    }
]


@pytest.mark.parametrize(
    ("headers", "body", "seconds"),
    [
        ({"retry-after-ms": "1500", "Retry-After": "9"}, None, 1.5),
        ({"Retry-After": "2"}, OPENAI_429_BODY, 2.0),
        ({}, OPENAI_429_BODY, 1.146),
        ({}, GEMINI_429_BODY, 6.0),
        ({}, "Too many requests, retry after 3 seconds", 3.0),
        (
            {
                "x-ratelimit-remaining-requests": "499",
                "x-ratelimit-reset-requests": "120ms",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            {"error": {"message": "Rate limit reached"}},
            360.0,
        ),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "2s"}, None, 1.0),
        ({}, {"error": {"message": "Too Many Requests"}}, None),
        ({}, None, None),
    ],
    ids=[
        "retry-after-ms first",
        "Retry-After before body",
        "openai body hint",
        "gemini retryDelay in a JSON array",
        "plain text body",
        "exhausted limit's reset",
        "sooner reset when none is exhausted",
        "no hint at all",
        "nothing",
    ],
)
def test_retry_after_sources_in_order(headers, body, seconds):
    found = retry_after(headers, body)

    assert found == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_after_accepts_an_http_date():
    when = datetime.now(UTC) + timedelta(seconds=30)

    found = retry_after({"Retry-After": format_datetime(when, usegmt=True)})

    assert found is not None and 25 <= found <= 31


def test_backoff_grows_exponentially_within_jitter_and_is_capped():
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.2)
    rng = random.Random(7)

    delays = [policy.backoff(n, rng) for n in (1, 2, 3, 4, 5)]

    assert 0.8 <= delays[0] <= 1.2
    assert 1.6 <= delays[1] <= 2.4
    assert 3.2 <= delays[2] <= 4.8
    assert all(4.0 <= d <= 6.0 for d in delays[3:])


def test_server_hint_wins_over_backoff():
    policy = RetryPolicy(base_delay=10.0)

    assert policy.delay_for(RateLimited("slow down", retry_after=0.25), 1) == 0.25


def test_give_up_after_max_attempts_or_when_the_wait_exceeds_the_budget():
    policy = RetryPolicy(max_attempts=3, max_total_seconds=10.0, base_delay=1.0, jitter=0.0)
    error = TransientError("502")

    assert policy.next_delay(error, attempt=1, spent=0.0) == 1.0
    assert policy.next_delay(error, attempt=3, spent=0.0) is None
    assert policy.next_delay(RateLimited("x", retry_after=30), attempt=1, spent=0.0) is None
    assert policy.next_delay(error, attempt=2, spent=9.5) is None


def test_never_retry_a_bad_request():
    assert RetryPolicy().next_delay(BadRequest("bad"), attempt=1, spent=0.0) is None


def test_policy_reads_settings(settings):
    settings.ADSTUDIO_PROVIDER_RETRY = {"max_attempts": 5, "base_delay": 0.01}

    policy = RetryPolicy.from_settings()

    assert policy.max_attempts == 5
    assert policy.base_delay == 0.01
