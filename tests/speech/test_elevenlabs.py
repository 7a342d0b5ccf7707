"""The ElevenLabs adapter against the fake ElevenLabs server over real HTTP: the request on
the wire, the line read back, each failure as our error, and the key kept out of every
message and log line."""

from __future__ import annotations

import logging
import socket
import time
from decimal import Decimal

import pytest

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from speech import registry
from speech.base import SpeechRequest
from speech.elevenlabs import ElevenLabsSpeech
from speech.pricing import speech_cost
from testbed.fake_elevenlabs import (
    INTERNAL_ERROR,
    INVALID_API_KEY,
    QUOTA_EXCEEDED,
    SERVICE_UNAVAILABLE,
    TEST_API_KEY,
    VOICE_ID,
    FakeReply,
    detail,
    error_reply,
    system_busy,
    tone,
    too_many_concurrent_requests,
    validation_error,
)

TEXT = "Thirty characters of ad copy.."  # 30 characters: two seconds of the fake's tone


def line(**overrides) -> SpeechRequest:
    fields = {"provider": "elevenlabs", "voice_id": VOICE_ID, "text": TEXT, "language": "en"}
    fields.update(overrides)
    return SpeechRequest(**fields)


@pytest.fixture
def adapter(fake_elevenlabs) -> ElevenLabsSpeech:
    return ElevenLabsSpeech(api_key=TEST_API_KEY, base_url=fake_elevenlabs.base_url, timeout_s=5)


# --- the request ---------------------------------------------------------------------


def test_the_request_on_the_wire(fake_elevenlabs, adapter):
    settings = {
        "stability": 0.3,
        "similarity_boost": "0.8",  # as a catalogue may hold it
        "style": 0.1,
        "use_speaker_boost": False,
        "instructions": "Speak warmly",  # OpenAI's: not ElevenLabs'
        "speed": 2.0,  # the line's speed is SpeechRequest.speed
    }

    adapter.synthesize(line(speed=1.1, settings=settings))

    [sent] = fake_elevenlabs.requests
    assert (sent.method, sent.path) == ("POST", f"/v1/text-to-speech/{VOICE_ID}")
    assert sent.query == {"output_format": "pcm_24000"}
    assert sent.key_sent
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "text": TEXT,
        "model_id": "eleven_multilingual_v2",
        "voice_settings": {
            "stability": 0.3,
            "similarity_boost": 0.8,
            "style": 0.1,
            "use_speaker_boost": False,
            "speed": 1.1,
        },
    }


def test_a_line_that_asks_for_nothing_keeps_the_voices_stored_settings(fake_elevenlabs, adapter):
    adapter.synthesize(line())

    [sent] = fake_elevenlabs.requests
    assert "voice_settings" not in sent.body
    assert "language_code" not in sent.body


@pytest.mark.parametrize(("speed", "sent"), [(0.5, 0.7), (1.5, 1.2), (0.9, 0.9), (1.2, 1.2)])
def test_speed_is_clamped_to_what_the_api_accepts(fake_elevenlabs, adapter, speed, sent):
    adapter.synthesize(line(speed=speed))

    assert fake_elevenlabs.requests[0].body["voice_settings"] == {"speed": sent}


def test_the_model_is_the_lines_then_the_configured_then_the_default(fake_elevenlabs):
    configured = ElevenLabsSpeech(
        api_key=TEST_API_KEY, base_url=fake_elevenlabs.base_url, model="eleven_turbo_v2_5"
    )

    first = configured.synthesize(line(model="eleven_flash_v2_5"))
    second = configured.synthesize(line())

    sent = [r.body["model_id"] for r in fake_elevenlabs.requests]
    assert sent == ["eleven_flash_v2_5", "eleven_turbo_v2_5"]
    assert (first.model, second.model) == ("eleven_flash_v2_5", "eleven_turbo_v2_5")
    assert ElevenLabsSpeech(api_key="k").default_model == "eleven_multilingual_v2"


@pytest.mark.parametrize(
    ("model", "sends_language"),
    [
        ("eleven_flash_v2_5", True),
        ("eleven_turbo_v2_5", True),
        ("eleven_multilingual_v2", False),  # the API answers language_code with an error
        ("eleven_v3", False),
    ],
)
def test_language_code_only_for_models_that_take_it(
    fake_elevenlabs, adapter, model, sends_language
):
    adapter.synthesize(line(language="th", model=model))

    body = fake_elevenlabs.requests[0].body
    assert body.get("language_code") == ("th" if sends_language else None)


def test_a_base_url_given_with_v1_reaches_the_same_path(fake_elevenlabs):
    adapter = ElevenLabsSpeech(api_key=TEST_API_KEY, base_url=fake_elevenlabs.base_url + "/v1/")

    adapter.synthesize(line())

    assert fake_elevenlabs.requests[0].path == f"/v1/text-to-speech/{VOICE_ID}"


def test_a_setting_that_is_not_a_number_is_refused_before_any_request(fake_elevenlabs, adapter):
    with pytest.raises(BadRequest, match=r"stability='high' is not a number"):
        adapter.synthesize(line(settings={"stability": "high"}))

    assert fake_elevenlabs.count == 0


# --- the result ----------------------------------------------------------------------


def test_the_line_read_back(fake_elevenlabs, adapter):
    result = adapter.synthesize(line())

    assert result.audio == tone(TEXT)  # the PCM the server sent, byte for byte
    assert len(result.audio) == 2 * 48_000  # 16-bit samples, two seconds at 24 kHz
    assert result.sample_rate == 24_000
    assert result.duration_s == pytest.approx(2.0)
    assert result.characters == len(TEXT)  # the character-cost header
    assert result.request_id == fake_elevenlabs._request_id(1)
    assert len(result.request_id) == 20
    assert result.model == "eleven_multilingual_v2"


def test_a_faster_line_is_shorter(fake_elevenlabs, adapter):
    result = adapter.synthesize(line(speed=1.2))

    assert result.duration_s == pytest.approx(2.0 / 1.2, abs=1e-4)


def test_characters_are_the_charged_count_when_the_api_reports_one(fake_elevenlabs, adapter):
    fake_elevenlabs.script(
        FakeReply(headers={"character-cost": "15"}),  # e.g. a model charging half
        FakeReply(headers={"character-cost": None}),
        FakeReply(headers={"character-cost": "n/a"}),
    )

    charged = [adapter.synthesize(line()).characters for _ in range(3)]

    assert charged == [15, len(TEXT), len(TEXT)]


def test_a_200_that_is_not_audio_is_transient(fake_elevenlabs, adapter):
    fake_elevenlabs.script(FakeReply(content_type="text/html; charset=utf-8"))

    with pytest.raises(TransientError, match="text/html") as caught:
        adapter.synthesize(line())

    assert caught.value.request_id == fake_elevenlabs._request_id(1)


def test_a_200_without_audio_is_transient(fake_elevenlabs, adapter):
    fake_elevenlabs.script(FakeReply(audio=b""))

    with pytest.raises(TransientError, match="no audio"):
        adapter.synthesize(line())


# --- errors --------------------------------------------------------------------------

ERRORS = [
    ("invalid key", INVALID_API_KEY, AuthenticationFailed, 401, "invalid_api_key", "Invalid API"),
    (
        "validation",
        validation_error(["body", "voice_settings", "speed"], "Input should be a number", "float"),
        BadRequest,
        422,
        "float",
        "body.voice_settings.speed: Input should be a number",
    ),
    (
        "concurrency",
        too_many_concurrent_requests(retry_after="3"),
        RateLimited,
        429,
        "too_many_concurrent_requests",
        "Too many concurrent requests",
    ),
    ("busy", system_busy(), RateLimited, 429, "system_busy", "high levels of traffic"),
    ("quota", QUOTA_EXCEEDED, QuotaExhausted, 401, "quota_exceeded", "insufficient quota"),
    ("server error", INTERNAL_ERROR, TransientError, 500, "", "Internal Server Error"),
    ("unavailable", SERVICE_UNAVAILABLE, TransientError, 503, "", "Service Unavailable"),
]


@pytest.mark.parametrize(
    ("label", "reply", "kind", "status", "code", "text"), ERRORS, ids=[e[0] for e in ERRORS]
)
def test_each_error_reply_is_our_error(
    fake_elevenlabs, adapter, label, reply, kind, status, code, text
):
    fake_elevenlabs.script(reply)

    with pytest.raises(kind) as caught:
        adapter.synthesize(line())

    error = caught.value
    assert type(error) is kind
    assert (error.provider, error.status, error.provider_code) == ("elevenlabs", status, code)
    assert text in error.message
    assert error.request_id == fake_elevenlabs._request_id(1)
    assert error.retryable is (kind in (RateLimited, TransientError))
    assert TEST_API_KEY not in str(error)


def test_a_rate_limit_carries_the_servers_wait(fake_elevenlabs, adapter):
    fake_elevenlabs.script(too_many_concurrent_requests(retry_after="3"), system_busy())

    with pytest.raises(RateLimited) as told:
        adapter.synthesize(line())
    with pytest.raises(RateLimited) as untold:
        adapter.synthesize(line())

    assert told.value.retry_after == 3.0
    assert untold.value.retry_after is None


def test_the_sdk_does_not_retry(fake_elevenlabs, adapter):
    fake_elevenlabs.script(INTERNAL_ERROR)

    with pytest.raises(TransientError):
        adapter.synthesize(line())

    assert fake_elevenlabs.count == 1


def test_a_wrong_key_is_refused_and_the_message_says_which_variable(fake_elevenlabs):
    wrong = "wrong-key-0123456789abcdef"
    adapter = ElevenLabsSpeech(api_key=wrong, base_url=fake_elevenlabs.base_url)

    with pytest.raises(AuthenticationFailed) as caught:
        adapter.synthesize(line())

    assert not fake_elevenlabs.requests[0].key_sent
    assert "ELEVENLABS_API_KEY" in str(caught.value)
    assert wrong not in str(caught.value)
    assert wrong not in repr(adapter)


def test_no_key_fails_before_any_request(fake_elevenlabs):
    adapter = ElevenLabsSpeech(api_key="", base_url=fake_elevenlabs.base_url)

    with pytest.raises(AuthenticationFailed, match="set ELEVENLABS_API_KEY"):
        adapter.synthesize(line())

    assert fake_elevenlabs.count == 0


def test_a_reply_slower_than_the_timeout_is_transient(fake_elevenlabs):
    adapter = ElevenLabsSpeech(
        api_key=TEST_API_KEY, base_url=fake_elevenlabs.base_url, timeout_s=0.2
    )
    fake_elevenlabs.script(FakeReply(delay=10))
    started = time.monotonic()

    with pytest.raises(TransientError, match=r"no response within 0\.2s"):
        adapter.synthesize(line())

    assert time.monotonic() - started < 3


def test_a_refused_connection_is_transient():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    adapter = ElevenLabsSpeech(api_key=TEST_API_KEY, base_url=f"http://127.0.0.1:{port}")

    with pytest.raises(TransientError, match="connection failed: ConnectError"):
        adapter.synthesize(line())


def test_the_key_is_in_no_message_and_no_log_line(fake_elevenlabs, caplog):
    caplog.set_level(logging.DEBUG)
    adapter = ElevenLabsSpeech(
        api_key=TEST_API_KEY, base_url=fake_elevenlabs.base_url, timeout_s=0.3
    )
    # A server that quotes the key back in its message.
    echoed = error_reply(401, detail("invalid_api_key", f"Invalid API key: {TEST_API_KEY}"))
    errors = []

    adapter.synthesize(line())
    fake_elevenlabs.script(echoed, FakeReply(delay=5))
    for _ in range(2):
        with pytest.raises(Exception) as caught:
            adapter.synthesize(line())
        errors.append(caught.value)

    assert [type(e) for e in errors] == [AuthenticationFailed, TransientError]
    assert "Invalid API key: ***" in errors[0].message
    for error in errors:
        assert TEST_API_KEY not in f"{error} {error!r} {error.args}"
    assert caplog.records  # httpx and its transport logged the calls...
    for record in caplog.records:  # ...and none of their lines holds the key
        assert TEST_API_KEY not in record.getMessage()
        assert TEST_API_KEY not in repr(record.__dict__)


# --- the registry and the price --------------------------------------------------------


def test_the_registry_builds_a_working_adapter_from_settings(fake_elevenlabs, settings):
    settings.ADSTUDIO_SPEECH_PROVIDERS = {
        "elevenlabs": {
            "api_key": TEST_API_KEY,
            "base_url": fake_elevenlabs.base_url,
            "model": "eleven_flash_v2_5",
            "timeout_s": 5,  # the registry hands it over as "5"
            "region": "",  # empty: not passed at all
        }
    }
    try:
        adapter = registry.speech_provider("elevenlabs")

        result = adapter.synthesize(line())
    finally:
        registry._adapter.cache_clear()

    assert isinstance(adapter, ElevenLabsSpeech)
    assert (adapter.name, adapter.timeout_s) == ("elevenlabs", 5.0)
    assert result.model == "eleven_flash_v2_5"
    assert result.duration_s == pytest.approx(2.0)
    assert fake_elevenlabs.requests[0].body["model_id"] == "eleven_flash_v2_5"


def test_the_registry_has_no_adapter_without_a_key(settings):
    settings.ADSTUDIO_SPEECH_PROVIDERS = {"elevenlabs": {"api_key": "", "base_url": ""}}

    assert registry.speech_provider("elevenlabs") is None


def test_an_unpriced_model_costs_nothing_exact_until_a_deployment_prices_it(settings):
    unpriced = speech_cost(provider="elevenlabs", model="eleven_multilingual_v2", characters=30)
    settings.ADSTUDIO_SPEECH_PRICES = {"elevenlabs": {"eleven_multilingual_v2": Decimal("100")}}
    priced = speech_cost(provider="elevenlabs", model="eleven_multilingual_v2", characters=30)

    assert (unpriced.usd, unpriced.exact) == (Decimal(0), False)
    assert (priced.usd, priced.exact) == (Decimal("0.003000"), True)
