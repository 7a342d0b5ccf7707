"""The Mubert music adapter against the fake Mubert API: the requests on the wire, the
polling, the decoded mono PCM, every error class, a track that never finishes, the
credentials kept out of messages and logs, and the music registry building the maker from
settings."""

from __future__ import annotations

import json
import logging
import socket
import time

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from speech.configuration import from_environment
from speech.mubert import MubertMusic, MusicTrack
from speech.music_registry import music_maker
from testbed.fake_mubert import (
    SAMPLE_RATE,
    TEST_MUBERT_ACCESS_TOKEN,
    TEST_MUBERT_CUSTOMER_ID,
    error_body,
    track_frames,
)

SECRETS = (TEST_MUBERT_ACCESS_TOKEN, TEST_MUBERT_CUSTOMER_ID)
PROMPT = "warm acoustic guitar bed for a coffee ad, 100 bpm"


def adapter(fake, **overrides) -> MubertMusic:
    options = {
        "customer_id": TEST_MUBERT_CUSTOMER_ID,
        "access_token": TEST_MUBERT_ACCESS_TOKEN,
        "base_url": fake.base_url,
        "timeout_s": 2.0,
        "poll_interval_s": 0.01,
        "max_wait_s": 2.0,
    }
    options.update(overrides)
    return MubertMusic(**options)


@pytest.fixture
def mubert(fake_mubert):
    maker = adapter(fake_mubert)
    yield maker
    maker.close()


def track_id_of(fake) -> str:
    [track_id] = list(fake.tracks)
    return track_id


# --- the requests on the wire ---------------------------------------------------------


def test_the_track_is_asked_for_by_prompt_with_the_customer_headers(mubert, fake_mubert):
    mubert.compose(prompt="  warm acoustic guitar,\n 100 bpm ", duration_s=6)

    [sent] = fake_mubert.creates
    assert (sent.method, sent.path) == ("POST", "/api/v3/public/tracks")
    assert sent.customer_given and sent.token_given
    assert sent.headers["content-type"] == "application/json"

    assert json.loads(sent.body) == {
        "prompt": "warm acoustic guitar, 100 bpm",  # whitespace collapsed
        "duration": 6,
        "format": "wav",
        "mode": "track",
    }
    for secret in SECRETS:
        assert secret not in sent.body
        assert secret not in repr(sent.headers)


def test_the_track_is_polled_until_done_then_downloaded_without_credentials(mubert, fake_mubert):
    fake_mubert.polls_before_done = 3

    track = mubert.compose(prompt=PROMPT, duration_s=5)

    track_id = track_id_of(fake_mubert)
    assert track.request_id == track_id
    polls = fake_mubert.polls
    assert len(polls) == 4  # three answered "processing", the fourth "done"
    assert {(p.method, p.path) for p in polls} == {("GET", f"/api/v3/public/tracks/{track_id}")}
    assert all(p.customer_given and p.token_given for p in polls)
    [download] = fake_mubert.downloads
    assert download.path == f"/files/{track_id}.wav"
    assert not download.customer_given and not download.token_given
    assert fake_mubert.count == 5  # one create, four polls: nothing asked twice


def test_the_stereo_wav_arrives_as_mono_pcm_at_its_rate_and_length(mubert, fake_mubert):
    track = mubert.compose(prompt=PROMPT, duration_s=7)

    assert isinstance(track, MusicTrack)
    assert track.sample_rate == SAMPLE_RATE == 44_100
    assert track.duration_s == pytest.approx(7.0)
    samples = np.frombuffer(track.audio, dtype="<i2")
    assert len(samples) == 7 * SAMPLE_RATE
    stereo = track_frames(7)
    assert not np.array_equal(stereo[:, 0], stereo[:, 1])  # a downmix has work to do
    expected = np.rint(stereo.astype(np.float64).mean(axis=1)).astype(np.int16)
    assert np.array_equal(samples, expected)


@pytest.mark.parametrize(
    ("prompt", "duration_s", "named"),
    [
        ("   ", 10, "prompt is empty"),
        ("x" * 201, 10, "201 characters long; Mubert takes at most 200"),
        (PROMPT, 4, "5 s or more, not 4 s"),
        (PROMPT, 6.5, "whole seconds, not 6.5"),
        (PROMPT, True, "whole seconds, not True"),
    ],
)
def test_what_mubert_would_refuse_is_refused_before_any_request(
    mubert, fake_mubert, prompt, duration_s, named
):
    with pytest.raises(BadRequest, match=named):
        mubert.compose(prompt=prompt, duration_s=duration_s)
    assert fake_mubert.count == 0


# --- errors ---------------------------------------------------------------------------


def test_a_wrong_token_is_an_authentication_failure_naming_the_variable(fake_mubert):
    wrong = "mbfake-wrong-token-000000000000"
    maker = adapter(fake_mubert, access_token=wrong)

    with pytest.raises(AuthenticationFailed) as caught:
        maker.compose(prompt=PROMPT, duration_s=10)

    assert caught.value.status == 401
    assert caught.value.provider == "mubert"
    assert caught.value.provider_code == "Unauthenticated"
    assert "MUBERT_ACCESS_TOKEN" in str(caught.value)
    assert wrong not in str(caught.value)
    assert fake_mubert.tracks == {}


@pytest.mark.parametrize(
    ("status", "body", "headers", "error", "named"),
    [
        (
            403,
            error_body("Access token is expired", "AccessTokenExpired"),
            {},
            AuthenticationFailed,
            "MUBERT_ACCESS_TOKEN",
        ),
        (
            422,
            {"message": "The duration field must be at least 5."},
            {},
            BadRequest,
            "HTTP 422): The duration field must be at least 5.",
        ),
        (400, error_body("Bad request", "BadRequest"), {}, BadRequest, "HTTP 400"),
        (
            403,
            error_body(
                "The license does not provide for the use of the specified format",
                "LicenseForbiddenFormat",
            ),
            {},
            BadRequest,
            "the license does not allow WAV",
        ),
        (
            403,
            error_body(
                "The limit of the number of tracks has been exceeded", "LicenseLimitTracksCount"
            ),
            {},
            QuotaExhausted,
            "track count is spent",
        ),
        (
            403,
            error_body(
                "The limit of concurrent track generations has been exceeded",
                "LicenseLimitConcurrentTrackGenerationsCount",
            ),
            {},
            RateLimited,
            "too many tracks are being generated at once",
        ),
        (429, error_body("Too Many Attempts.", ""), {"Retry-After": "7"}, RateLimited, "rate"),
        (500, error_body("Server Error", ""), {}, TransientError, "HTTP 500: Server Error"),
    ],
)
def test_each_refusal_of_the_new_track_is_its_own_error(
    mubert, fake_mubert, status, body, headers, error, named
):
    fake_mubert.fail(status, body=body, headers=headers)

    with pytest.raises(ProviderError) as caught:
        mubert.compose(prompt=PROMPT, duration_s=10)

    assert type(caught.value) is error
    assert caught.value.status == status
    assert named in str(caught.value)
    if status == 429:
        assert caught.value.retry_after == 7.0
    assert fake_mubert.polls == [] and fake_mubert.downloads == []


def test_a_slow_reply_is_a_transient_error(fake_mubert):
    fake_mubert.delay = 2.0
    maker = adapter(fake_mubert, timeout_s=0.2)

    started = time.monotonic()
    with pytest.raises(TransientError, match=r"no reply within 0\.2 s"):
        maker.compose(prompt=PROMPT, duration_s=10)
    assert time.monotonic() - started < 1.5


def test_an_unreachable_api_is_a_transient_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: nothing listens
    maker = MubertMusic(
        TEST_MUBERT_CUSTOMER_ID, TEST_MUBERT_ACCESS_TOKEN, base_url=f"http://127.0.0.1:{port}"
    )

    with pytest.raises(TransientError, match="could not reach") as caught:
        maker.compose(prompt=PROMPT, duration_s=10)
    for secret in SECRETS:
        assert secret not in str(caught.value)


def test_a_failed_generation_is_a_transient_error_naming_the_track(mubert, fake_mubert):
    fake_mubert.finish_with = "failed"

    with pytest.raises(TransientError, match="generation failed") as caught:
        mubert.compose(prompt=PROMPT, duration_s=10)

    track_id = track_id_of(fake_mubert)
    assert track_id in str(caught.value)
    assert caught.value.request_id == track_id
    assert fake_mubert.downloads == []


def test_a_track_that_never_finishes_is_given_up_within_max_wait(fake_mubert):
    fake_mubert.polls_before_done = 10**9
    # A second's wait: room for five polls on a host at half speed beside the suite, where
    # each poll's request took 50-160 ms (0.3 s held 4 there).
    maker = adapter(fake_mubert, poll_interval_s=0.02, max_wait_s=1.0)

    started = time.monotonic()
    with pytest.raises(TransientError, match=r"not ready within 1 s") as caught:
        maker.compose(prompt=PROMPT, duration_s=10)
    elapsed = time.monotonic() - started

    assert 1.0 <= elapsed < 3.0  # gave up at max_wait, not after the next several seconds
    track_id = track_id_of(fake_mubert)
    assert track_id in str(caught.value)
    assert "'processing'" in str(caught.value)
    assert len(fake_mubert.polls) >= 5
    assert fake_mubert.downloads == []


def test_a_wait_shorter_than_the_poll_interval_still_polls_once(fake_mubert):
    fake_mubert.polls_before_done = 0
    maker = adapter(fake_mubert, poll_interval_s=5.0, max_wait_s=0.1)

    started = time.monotonic()
    track = maker.compose(prompt=PROMPT, duration_s=5)

    assert time.monotonic() - started < 1.0
    assert track.duration_s == pytest.approx(5.0)
    assert len(fake_mubert.polls) == 1


def test_a_rate_limit_or_failure_while_polling_is_waited_out_not_a_second_track(
    mubert, fake_mubert
):
    fake_mubert.polls_before_done = 1
    fake_mubert.fail(429, headers={"Retry-After": "0"}, on="poll")
    fake_mubert.fail(503, on="poll")

    track = mubert.compose(prompt=PROMPT, duration_s=5)

    assert track.duration_s == pytest.approx(5.0)
    assert len(fake_mubert.creates) == 1  # the track made once, and billed once
    assert len(fake_mubert.polls) == 4  # 429, 503, processing, done


def test_a_refused_credential_while_polling_is_raised(mubert, fake_mubert):
    fake_mubert.fail(401, body=error_body("Unauthenticated", "Unauthenticated"), on="poll")

    with pytest.raises(AuthenticationFailed):
        mubert.compose(prompt=PROMPT, duration_s=5)
    assert len(fake_mubert.polls) == 1


def test_a_failed_download_is_a_transient_error_naming_the_track(mubert, fake_mubert):
    fake_mubert.fail(403, body={"message": "Request has expired"}, on="download")

    with pytest.raises(TransientError, match="download answered HTTP 403") as caught:
        mubert.compose(prompt=PROMPT, duration_s=5)
    assert track_id_of(fake_mubert) in str(caught.value)


def test_a_download_that_is_not_a_wav_file_is_a_transient_error(mubert, fake_mubert):
    fake_mubert.fail(200, body={"message": "an error page served with 200"}, on="download")

    with pytest.raises(TransientError, match="not a readable WAV file"):
        mubert.compose(prompt=PROMPT, duration_s=5)


# --- the credentials stay secret --------------------------------------------------------


def test_the_credentials_never_reach_a_message_or_a_log(fake_mubert, caplog):
    caplog.set_level(logging.DEBUG)
    maker = adapter(fake_mubert)
    echoed = f"token {TEST_MUBERT_ACCESS_TOKEN} of customer {TEST_MUBERT_CUSTOMER_ID} refused"
    messages = [repr(maker)]

    maker.compose(prompt=PROMPT, duration_s=5)
    for status, code in ((401, "Unauthenticated"), (403, "LicenseForbiddenMode"), (422, "")):
        fake_mubert.fail(status, body=error_body(echoed, code, description=echoed))
        with pytest.raises(ProviderError) as caught:
            maker.compose(prompt=PROMPT, duration_s=5)
        messages.append(str(caught.value))

    assert any("refused" in message for message in messages)  # the server's words kept
    for secret in SECRETS:
        assert secret not in caplog.text
        for message in messages:
            assert secret not in message
    assert "mubert track" in caplog.text  # the adapter's own log line was captured


# --- configuration and the registry ---------------------------------------------------


def test_the_music_registry_hands_out_a_working_maker_from_settings(settings, fake_mubert):
    entry = fake_mubert.settings()
    entry["mubert"]["poll_interval_s"] = "0.01"
    settings.ADSTUDIO_MUSIC_PROVIDERS = entry

    maker = music_maker("mubert")

    assert isinstance(maker, MubertMusic)
    assert music_maker("mubert") is maker  # one per configuration: its connection pool kept
    track = maker.compose(prompt=PROMPT, duration_s=5)
    assert track.duration_s == pytest.approx(5.0)
    assert len(fake_mubert.creates) == 1
    assert music_maker("loudly") is None


@pytest.mark.parametrize(
    "entry",
    [
        {},
        {"mubert": {"customer_id": TEST_MUBERT_CUSTOMER_ID, "access_token": ""}},
        {"mubert": {"customer_id": "", "access_token": TEST_MUBERT_ACCESS_TOKEN}},
    ],
)
def test_the_music_registry_has_no_maker_without_both_credentials(settings, entry):
    settings.ADSTUDIO_MUSIC_PROVIDERS = entry

    assert music_maker("mubert") is None


def test_the_mubert_variables_are_read_beside_the_speech_providers(monkeypatch):
    for name in ("MUBERT_CUSTOMER_ID", "MUBERT_ACCESS_TOKEN", "MUBERT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    before = from_environment()
    assert before["ADSTUDIO_MUSIC_PROVIDERS"]["mubert"]["access_token"] == ""

    monkeypatch.setenv("MUBERT_CUSTOMER_ID", TEST_MUBERT_CUSTOMER_ID)
    with pytest.raises(ImproperlyConfigured, match="MUBERT_ACCESS_TOKEN is not"):
        from_environment()
    monkeypatch.setenv("MUBERT_ACCESS_TOKEN", TEST_MUBERT_ACCESS_TOKEN)
    monkeypatch.setenv("MUBERT_BASE_URL", "music-api.mubert.com/api/v3")
    with pytest.raises(ImproperlyConfigured, match="MUBERT_BASE_URL='music-api"):
        from_environment()
    monkeypatch.setenv("MUBERT_BASE_URL", "http://127.0.0.1:9/api/v3/")

    after = from_environment()
    assert after["ADSTUDIO_MUSIC_PROVIDERS"] == {
        "mubert": {
            "customer_id": TEST_MUBERT_CUSTOMER_ID,
            "access_token": TEST_MUBERT_ACCESS_TOKEN,
            "base_url": "http://127.0.0.1:9/api/v3",
        }
    }
    # The speech providers are as they were: no music provider among them or their prices.
    assert after["ADSTUDIO_SPEECH_PROVIDERS"] == before["ADSTUDIO_SPEECH_PROVIDERS"]
    assert set(after["ADSTUDIO_SPEECH_PROVIDERS"]) == {"elevenlabs", "openai", "azure"}
    assert after["ADSTUDIO_SPEECH_PRICES"] == before["ADSTUDIO_SPEECH_PRICES"]
