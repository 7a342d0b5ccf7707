"""The OpenAI speech adapter against the fake API over real HTTP: the request on the wire,
the audio it returns, each error as our hierarchy, the key kept out of every message, and
the adapter the registry builds from settings."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from speech.base import SAMPLE_RATE, SpeechRequest
from speech.openai_speech import MAX_INPUT_CHARACTERS, MODELS, OpenAISpeech
from testbed import fake_openai_speech as fake_api
from testbed.fake_openai_speech import Failure, FakeOpenAISpeechServer, tone


def adapter(fake: FakeOpenAISpeechServer, **options) -> OpenAISpeech:
    return OpenAISpeech(**{"api_key": fake.api_key, "base_url": fake.base_url, **options})


def line(text: str = "Fresh coffee, every morning.", **fields) -> SpeechRequest:
    return SpeechRequest(
        **{"provider": "openai", "voice_id": "coral", "text": text, "language": "en", **fields}
    )


def failure_of(fake: FakeOpenAISpeechServer, failure: Failure, **options) -> ProviderError:
    fake.fail(failure)
    with pytest.raises(ProviderError) as caught:
        adapter(fake, **options).synthesize(line())
    return caught.value


# --- the request ---------------------------------------------------------------------


def test_the_request_names_model_voice_input_pcm_speed_and_instructions(fake_openai_speech):
    request = line(speed=1.25, settings={"instructions": " Warm, unhurried. ", "style": "x"})

    adapter(fake_openai_speech, model="gpt-4o-mini-tts").synthesize(request)

    [sent] = fake_openai_speech.requests
    assert sent["path"] == "/v1/audio/speech"
    assert sent["body"] == {
        "model": "gpt-4o-mini-tts",
        "voice": "coral",
        "input": "Fresh coffee, every morning.",
        "response_format": "pcm",
        "speed": 1.25,
        "instructions": "Warm, unhurried.",
    }
    assert sent["headers"]["content-type"] == "application/json"
    assert "authorization" not in sent["headers"]  # the fake keeps no key


def test_the_default_model_is_tts_1_hd_and_a_request_may_name_another(fake_openai_speech):
    speech = adapter(fake_openai_speech)

    first = speech.synthesize(line())
    second = speech.synthesize(line(model="tts-1"))

    assert [body["model"] for body in fake_openai_speech.bodies] == ["tts-1-hd", "tts-1"]
    assert (first.model, second.model) == ("tts-1-hd", "tts-1")


def test_instructions_go_only_to_a_model_that_follows_them(fake_openai_speech):
    speech = adapter(fake_openai_speech)

    speech.synthesize(line(settings={"instructions": "Whisper it."}))  # tts-1-hd
    speech.synthesize(line(model="gpt-4o-mini-tts", settings={"instructions": "   "}))
    speech.synthesize(line(model="gpt-4o-mini-tts-2025-12-15", settings={"instructions": "Hi"}))

    assert ["instructions" in body for body in fake_openai_speech.bodies] == [False, False, True]


@pytest.mark.parametrize(
    ("asked", "sent"), [(0.1, 0.25), (0.25, 0.25), (1.5, 1.5), (4.0, 4.0), (9.0, 4.0)]
)
def test_speed_is_clamped_to_the_api_range(fake_openai_speech, asked, sent):
    adapter(fake_openai_speech).synthesize(line(speed=asked))

    assert fake_openai_speech.bodies[0]["speed"] == sent


# --- the result ----------------------------------------------------------------------


def test_the_result_is_the_pcm_the_characters_and_the_request_id(fake_openai_speech):
    text = "กาแฟสดทุกเช้า"  # Thai: characters, not bytes, are what OpenAI bills

    result = adapter(fake_openai_speech).synthesize(line(text, voice_id="nova", speed=2.0))

    assert result.audio == tone(len(text), 2.0)
    assert result.sample_rate == SAMPLE_RATE == 24_000
    assert result.characters == len(text) == 13
    assert result.model == "tts-1-hd"
    assert result.request_id == "req_fake_speech_000001"
    assert result.duration_s == pytest.approx(13 * 0.06 / 2.0, abs=1e-3)


def test_a_line_of_the_maximum_length_is_read(fake_openai_speech):
    result = adapter(fake_openai_speech).synthesize(line("a" * MAX_INPUT_CHARACTERS))

    assert result.characters == 4096
    assert result.duration_s == pytest.approx(4096 * 0.06, abs=1e-3)


# --- refused before any request ------------------------------------------------------


def test_a_line_over_the_input_limit_is_refused_before_any_request(fake_openai_speech):
    with pytest.raises(BadRequest) as caught:
        adapter(fake_openai_speech).synthesize(line("a" * 4097))

    assert "4097 characters" in str(caught.value) and "at most 4096" in str(caught.value)
    assert fake_openai_speech.count == 0


def test_an_empty_line_is_refused_before_any_request(fake_openai_speech):
    with pytest.raises(BadRequest, match="nothing to read"):
        adapter(fake_openai_speech).synthesize(line("  \n"))
    assert fake_openai_speech.count == 0


def test_a_voice_the_model_lacks_is_refused_with_the_models_that_read_it(fake_openai_speech):
    with pytest.raises(BadRequest) as caught:
        adapter(fake_openai_speech).synthesize(line(voice_id="marin"))

    message = str(caught.value)
    assert "tts-1-hd has no voice 'marin'" in message
    assert "gpt-4o-mini-tts" in message and "ADSTUDIO_OPENAI_SPEECH_MODEL" in message
    assert fake_openai_speech.count == 0


def test_our_voice_lists_match_the_api_s(fake_openai_speech):
    assert {name: set(model.voices) for name, model in MODELS.items()} == {
        name: set(voices) for name, voices in fake_api.VOICES.items()
    }


# --- errors --------------------------------------------------------------------------


def test_a_refused_key_is_authentication_failed_naming_the_variable(fake_openai_speech):
    wrong = "sk-wrong-0123456789abcdef"
    with pytest.raises(AuthenticationFailed) as caught:
        adapter(fake_openai_speech, api_key=wrong).synthesize(line())

    error = caught.value
    assert error.status == 401 and error.provider_code == "invalid_api_key"
    assert "OPENAI_API_KEY" in str(error) and error.provider == "openai"
    assert not error.retryable


def test_a_voice_the_api_refuses_is_bad_request(fake_openai_speech):
    error = failure_of(fake_openai_speech, fake_api.invalid_voice())

    assert isinstance(error, BadRequest) and error.status == 400
    assert "Input should be 'nova'" in str(error)
    assert not error.retryable


def test_a_rate_limit_is_rate_limited_with_the_wait_from_retry_after(fake_openai_speech):
    error = failure_of(fake_openai_speech, fake_api.rate_limited(retry_after="2"))

    assert isinstance(error, RateLimited) and error.retryable
    assert error.retry_after == 2.0
    assert error.provider_code == "rate_limit_exceeded"
    assert error.request_id == "req_fake_speech_err_429"


def test_a_rate_limit_without_retry_after_waits_as_the_reset_header_says(fake_openai_speech):
    failure = fake_api.rate_limited(retry_after=None, reset_requests="1m30s")

    error = failure_of(fake_openai_speech, failure)

    assert isinstance(error, RateLimited)
    assert error.retry_after == 90.0


def test_insufficient_quota_is_quota_exhausted_never_retried(fake_openai_speech):
    error = failure_of(fake_openai_speech, fake_api.insufficient_quota())

    assert isinstance(error, QuotaExhausted) and not error.retryable
    assert error.status == 429 and "OPENAI_API_KEY" in str(error)


def test_a_server_error_is_transient(fake_openai_speech):
    error = failure_of(fake_openai_speech, fake_api.server_error())

    assert isinstance(error, TransientError) and error.retryable
    assert error.status == 500


def test_an_error_object_sent_with_status_200_is_not_audio(fake_openai_speech):
    error = failure_of(fake_openai_speech, Failure(200, fake_api.insufficient_quota().body))

    assert isinstance(error, QuotaExhausted)


def test_a_slow_reply_is_a_transient_timeout(fake_openai_speech):
    fake_openai_speech.delay = 2.0
    started = time.monotonic()

    with pytest.raises(TransientError) as caught:
        adapter(fake_openai_speech, timeout_s="0.2").synthesize(line())

    assert "no response within 0.2s" in str(caught.value)
    assert fake_openai_speech.count == 1  # no retry of the SDK's own
    assert time.monotonic() - started < fake_openai_speech.delay  # gave up before the reply


def test_a_refused_connection_is_transient():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    speech = OpenAISpeech(api_key="sk-x-0123456789", base_url=f"http://127.0.0.1:{port}/v1")

    with pytest.raises(TransientError, match="connection failed"):
        speech.synthesize(line())


def test_without_a_key_nothing_is_sent(fake_openai_speech):
    with pytest.raises(AuthenticationFailed, match="set OPENAI_API_KEY"):
        adapter(fake_openai_speech, api_key="").synthesize(line())
    assert fake_openai_speech.count == 0


def test_a_bad_timeout_is_refused_at_construction():
    with pytest.raises(ValueError, match="timeout_s"):
        OpenAISpeech(api_key="sk-x-0123456789", timeout_s="soon")


# --- the key -------------------------------------------------------------------------


def test_the_key_is_in_no_message_repr_or_log(fake_openai_speech, caplog):
    caplog.set_level(logging.DEBUG)
    key = fake_openai_speech.api_key
    quoting = Failure(401, {"error": {"message": f"Incorrect API key provided: {key}."}})
    speech = adapter(fake_openai_speech)

    speech.synthesize(line())
    fake_openai_speech.fail(quoting)
    with pytest.raises(AuthenticationFailed) as caught:
        speech.synthesize(line())

    assert "Incorrect API key provided" in str(caught.value)  # the message is kept...
    assert key not in str(caught.value) and key not in repr(caught.value)  # ...not the key
    assert key not in repr(speech)
    assert caplog.records  # the SDK and HTTP client did log the calls
    assert key not in caplog.text


# --- the registry --------------------------------------------------------------------


def test_the_registry_builds_a_working_adapter_from_settings(fake_openai_speech, settings):
    from speech.registry import speech_provider

    settings.ADSTUDIO_SPEECH_PROVIDERS = {
        "openai": {
            "api_key": fake_openai_speech.api_key,
            "base_url": fake_openai_speech.base_url,
            "model": "",  # empty: left out, the adapter's default
            "timeout_s": 5,  # passed on as "5"
        }
    }

    speech = speech_provider("openai")

    assert isinstance(speech, OpenAISpeech)
    assert speech.timeout == 5.0 and speech.model == "tts-1-hd"
    result = speech.synthesize(line())
    assert result.audio == tone(len(line().text))
    assert fake_openai_speech.count == 1


def test_the_registry_has_no_adapter_without_a_key(settings):
    from speech.registry import speech_provider

    settings.ADSTUDIO_SPEECH_PROVIDERS = {"openai": {"api_key": "", "base_url": "http://x"}}

    assert speech_provider("openai") is None


# --- the price -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "usd", "exact"),
    [("tts-1", "0.015000", True), ("tts-1-hd", "0.030000", True), ("gpt-4o-mini-tts", "0", False)],
)
def test_a_thousand_characters_cost_the_published_price(settings, model, usd, exact):
    from decimal import Decimal

    from speech.pricing import speech_cost

    settings.ADSTUDIO_SPEECH_PRICES = None  # the built-in table, not a deployment's

    cost = speech_cost(provider="openai", model=model, characters=1000)

    assert (cost.usd, cost.exact) == (Decimal(usd), exact)
