"""The fake ElevenLabs server answers as the API does where the adapter does not look: its
validation, its key check on every route, its listing, and the delay benchmarks use."""

from __future__ import annotations

import time

import httpx
import pytest

from testbed.fake_elevenlabs import TEST_API_KEY, VOICE_ID, tone

KEY = {"xi-api-key": TEST_API_KEY}


@pytest.fixture
def http(fake_elevenlabs):
    with httpx.Client(base_url=fake_elevenlabs.base_url, timeout=5) as client:
        yield client


def test_the_key_is_checked_and_never_recorded(fake_elevenlabs, http):
    refused = http.get("/v1/voices", headers={"xi-api-key": "wrong"})
    listed = http.get("/v1/voices", headers=KEY)

    assert refused.status_code == 401
    assert refused.json() == {"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}
    assert [v["voice_id"] for v in listed.json()["voices"]] == [VOICE_ID, "th4iVoiceNiranXyZ123"]
    assert [r.key_sent for r in fake_elevenlabs.requests] == [False, True]
    assert all("xi-api-key" not in r.headers for r in fake_elevenlabs.requests)
    assert fake_elevenlabs.count == 2


def test_a_body_without_text_is_a_422_list(http):
    reply = http.post(f"/v1/text-to-speech/{VOICE_ID}", json={"model_id": "x"}, headers=KEY)

    assert reply.status_code == 422
    assert reply.json() == {
        "detail": [{"loc": ["body", "text"], "msg": "Field required", "type": "missing"}]
    }


@pytest.mark.parametrize(("output_format", "status"), [("wav_9", 422), ("mp3_44100_128", 422)])
def test_only_pcm_is_served(http, output_format, status):
    reply = http.post(
        f"/v1/text-to-speech/{VOICE_ID}",
        params={"output_format": output_format},
        json={"text": "hi"},
        headers=KEY,
    )

    assert reply.status_code == status
    assert reply.json()["detail"][0]["loc"] == ["query", "output_format"]


def test_pcm_at_the_rate_asked_for(http):
    reply = http.post(
        f"/v1/text-to-speech/{VOICE_ID}",
        params={"output_format": "pcm_16000"},
        json={"text": "x" * 15},
        headers=KEY,
    )

    assert reply.status_code == 200
    assert reply.content == tone("x" * 15, sample_rate=16_000)
    assert len(reply.content) == 2 * 16_000  # one second
    assert reply.headers["character-cost"] == "15"


def test_unknown_routes_are_404(http):
    assert http.post("/v1/text-to-speech", json={"text": "hi"}, headers=KEY).status_code == 404


def test_the_servers_delay_holds_every_answer(fake_elevenlabs, http):
    fake_elevenlabs.delay = 0.3
    started = time.monotonic()

    reply = http.post(
        f"/v1/text-to-speech/{VOICE_ID}",
        params={"output_format": "pcm_24000"},
        json={"text": "hi"},
        headers=KEY,
    )

    assert reply.status_code == 200
    assert time.monotonic() - started >= 0.3
