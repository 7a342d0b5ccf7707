"""Classifying error replies: which are final, which are retried, and how they read."""

from __future__ import annotations

import pytest

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from providers.errors import ErrorDetail, classify_status, classify_stream_error, error_detail

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"


def classify(status, body, headers=None):
    return classify_status(
        status=status,
        body=body,
        headers=headers or {},
        provider="openai",
        key_env="OPENAI_API_KEY",
        secrets=(KEY,),
        request_id="req_1",
    )


CASES = [
    (
        "openai insufficient_quota 429 is final",
        429,
        {
            "message": "You exceeded your current quota, please check your plan and billing.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        },
        QuotaExhausted,
    ),
    (
        "spend limit is final",
        429,
        {"message": "You have reached your monthly spend limit.", "type": "requests"},
        QuotaExhausted,
    ),
    (
        "openai rate limit is retried",
        429,
        {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"},
        RateLimited,
    ),
    (
        "dashscope throttling is retried",
        429,
        {"code": "Throttling.RateQuota", "message": "Requests rate limit exceeded"},
        RateLimited,
    ),
    (
        "moonshot overload 429 is transient",
        429,
        {"error": {"type": "engine_overloaded_error", "message": "The engine is overloaded"}},
        TransientError,
    ),
    (
        "moonshot exhausted quota is final",
        429,
        {"error": {"type": "exceeded_current_quota_error", "message": "Your account is suspended"}},
        QuotaExhausted,
    ),
    (
        "anthropic-style 529 overloaded is transient",
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        TransientError,
    ),
    ("502 html is transient", 502, "<html><body>Bad gateway</body></html>", TransientError),
    (
        "dashscope moderation is content filtered",
        400,
        {
            "message": "Input data may contain inappropriate content.",
            "type": "data_inspection_failed",
            "code": "data_inspection_failed",
        },
        ContentFiltered,
    ),
    (
        "dashscope arrears is quota",
        400,
        {"code": "Arrearage", "message": "Access denied"},
        QuotaExhausted,
    ),
    (
        "context length is a bad request",
        400,
        {"message": "maximum context length exceeded", "code": "context_length_exceeded"},
        BadRequest,
    ),
    ("401 is authentication", 401, {"message": "Invalid Authentication"}, AuthenticationFailed),
    ("403 is authentication", 403, {"message": "Forbidden"}, AuthenticationFailed),
    ("404 unknown model is a bad request", 404, {"message": "model not found"}, BadRequest),
]


@pytest.mark.parametrize(("label", "status", "body", "kind"), CASES, ids=[c[0] for c in CASES])
def test_classification(label, status, body, kind):
    error = classify(status, body)

    assert type(error) is kind
    assert error.status == status
    assert error.provider == "openai"
    assert error.request_id == "req_1"
    assert error.retryable is (kind in (RateLimited, TransientError))


def test_authentication_message_names_the_env_var_and_never_the_key():
    body = {"message": f"Incorrect API key provided: {KEY}. You can find your key at ..."}

    error = classify(401, body)

    assert "OPENAI_API_KEY" in str(error)
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert "sk-***" in str(error) or "***" in str(error)


def test_rate_limit_carries_the_servers_wait():
    error = classify(429, {"message": "Please try again in 20ms."}, {"x-request-id": "r"})

    assert isinstance(error, RateLimited)
    assert error.retry_after == pytest.approx(0.02)


def test_error_body_shapes():
    assert error_detail({"error": {"code": "x", "message": "m"}}).code == "x"
    assert error_detail([{"error": {"status": "RESOURCE_EXHAUSTED", "message": "m"}}]).code == (
        "RESOURCE_EXHAUSTED"
    )
    assert error_detail("upstream connect error").message == "upstream connect error"
    assert error_detail('{"code": "Throttling", "message": "slow"}').code == "Throttling"


def test_error_object_after_200_is_transient_unless_it_is_moderation():
    cut = classify_stream_error(
        {"message": "upstream failure", "type": "server_error"}, provider="qwen", key_env="K"
    )
    filtered = classify_stream_error(
        {
            "code": "data_inspection_failed",
            "message": "Output data may contain inappropriate content.",
        },
        provider="qwen",
        key_env="K",
    )

    assert isinstance(cut, TransientError)
    assert isinstance(filtered, ContentFiltered)


# ElevenLabs answers as a FastAPI service does: {"detail": {...}} with a legacy ``status``
# code (and, in newer replies, ``type`` and ``code``), or a list of validation errors.
ELEVENLABS_CASES = [
    (
        "invalid key is authentication",
        401,
        {"detail": {"status": "invalid_api_key", "message": "Invalid API key"}},
        AuthenticationFailed,
        "Invalid API key",
    ),
    (
        "quota exceeded with 401 is final, not an authentication failure",
        401,
        {"detail": {"status": "quota_exceeded", "message": "You have insufficient quota"}},
        QuotaExhausted,
        "You have insufficient quota",
    ),
    (
        "quota exceeded with 400 is final",
        400,
        {"detail": {"status": "quota_exceeded", "message": "You have insufficient quota"}},
        QuotaExhausted,
        "You have insufficient quota",
    ),
    (
        "too many concurrent requests is retried",
        429,
        {"detail": {"status": "too_many_concurrent_requests", "message": "Too many at once"}},
        RateLimited,
        "Too many at once",
    ),
    (
        "a validation list names the field",
        422,
        {"detail": [{"loc": ["body", "text"], "msg": "Field required", "type": "missing"}]},
        BadRequest,
        "body.text: Field required",
    ),
]


@pytest.mark.parametrize(
    ("label", "status", "body", "kind", "text"),
    ELEVENLABS_CASES,
    ids=[c[0] for c in ELEVENLABS_CASES],
)
def test_elevenlabs_detail_bodies(label, status, body, kind, text):
    error = classify(status, body)

    assert type(error) is kind
    assert text in error.message
    assert error.provider_code == (
        body["detail"][0]["type"] if isinstance(body["detail"], list) else body["detail"]["status"]
    )


def test_elevenlabs_detail_shapes():
    newer = {
        "detail": {
            "type": "validation_error",
            "code": "invalid_parameters",
            "message": "The 'keyterms' parameter is only supported with 'scribe_v2'.",
            "status": "invalid_parameters",
            "request_id": "3c807fc4c3a1705f9638ecc764a91c01",
            "param": "keyterms",
        }
    }

    assert error_detail(newer) == ErrorDetail(
        code="invalid_parameters",
        message="The 'keyterms' parameter is only supported with 'scribe_v2'.",
    )
    assert error_detail({"detail": "Not Found"}) == ErrorDetail(code="", message="Not Found")
    two = {
        "detail": [
            {"loc": ["query", "output_format"], "msg": "bad format", "type": "enum"},
            {"loc": [], "msg": "and another", "type": "value_error"},
        ]
    }
    assert error_detail(two) == ErrorDetail(
        code="enum", message="query.output_format: bad format; and another"
    )
