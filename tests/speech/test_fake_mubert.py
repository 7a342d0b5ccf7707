"""The fake Mubert API refuses what Mubert's reference says the API refuses, and reports
it: a test whose adapter sends such a request fails at teardown."""

from __future__ import annotations

import httpx
import pytest

from testbed.fake_mubert import (
    TEST_MUBERT_ACCESS_TOKEN,
    TEST_MUBERT_CUSTOMER_ID,
    FakeMubertServer,
    check_create,
)

CREDENTIALS = {"customer-id": TEST_MUBERT_CUSTOMER_ID, "access-token": TEST_MUBERT_ACCESS_TOKEN}


@pytest.fixture
def server():
    with FakeMubertServer() as fake:
        yield fake


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"prompt": "calm piano"}, "duration is required"),
        ({"prompt": "calm piano", "duration": 4}, "below the minimum of 5"),
        ({"duration": 30}, "one of playlist_index, prompt or image"),
        ({"prompt": "x" * 256, "duration": 30}, "over the maximum of 255"),
        ({"prompt": "calm piano", "duration": 30, "bpm": 90}, "bpm and key are not allowed"),
        ({"prompt": "calm piano", "duration": 30, "mode": "mix"}, "not track or loop"),
        ({"prompt": "calm piano", "duration": 30, "format": "flac"}, "format 'flac'"),
        ({"prompt": "calm piano", "duration": 30, "intensity": "loud"}, "intensity 'loud'"),
        ({"prompt": "calm piano", "duration": 30, "bitrate": 64}, "bitrate 64"),
        ({"prompt": "calm piano", "duration": 30, "genre": "jazz"}, "unknown field 'genre'"),
    ],
)
def test_a_body_the_reference_refuses_is_named(body, named):
    assert any(named in problem for problem in check_create(body))


def test_the_reference_s_own_examples_pass():
    assert check_create({"prompt": "Chill lo-fi beat", "duration": 30}) == []
    assert (
        check_create(
            {
                "playlist_index": "1.0.0",
                "duration": 60,
                "bitrate": 128,
                "format": "wav",
                "intensity": "high",
                "mode": "track",
                "bpm": 120,
                "key": "C#m",
            }
        )
        == []
    )


def test_a_refused_body_is_answered_422_and_reported(server):
    reply = httpx.post(
        f"{server.base_url}/public/tracks", headers=CREDENTIALS, json={"duration": 30}
    )

    assert reply.status_code == 422
    assert "one of playlist_index, prompt or image" in reply.json()["message"]
    assert any("one of playlist_index" in problem for problem in server.verify())
    assert server.tracks == {}


def test_missing_credentials_are_401_in_the_reference_s_shape_and_not_a_problem(server):
    reply = httpx.post(
        f"{server.base_url}/public/tracks",
        headers={"customer-id": TEST_MUBERT_CUSTOMER_ID},
        json={"prompt": "calm piano", "duration": 30},
    )

    assert reply.status_code == 401
    assert reply.json()["code"] == "Unauthenticated"
    assert server.verify() == []
    [recorded] = server.creates
    assert recorded.customer_given and not recorded.token_given


def test_an_unknown_track_is_404_track_not_found(server):
    reply = httpx.get(f"{server.base_url}/public/tracks/no-such-track", headers=CREDENTIALS)

    assert reply.status_code == 404
    assert reply.json()["code"] == "TrackNotFound"
    assert any("unknown track 'no-such-track'" in p for p in server.verify())


def test_a_scripted_failure_never_served_is_reported(server):
    server.fail(500, on="download")

    assert server.verify() == ["1 scripted download failure(s) never served"]
    with pytest.raises(ValueError, match="create, poll, download"):
        server.fail(500, on="upload")
