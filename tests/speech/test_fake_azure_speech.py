"""The fake Azure Speech server refuses what Azure's REST reference says Azure refuses, so
the adapter's tests can trust it: raw requests, no adapter."""

from __future__ import annotations

import time

import httpx
import pytest

from testbed.fake_azure_speech import TEST_AZURE_KEY, VOICES, FakeAzureSpeechServer, tone

GOOD_SSML = (
    '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="th-TH">'
    '<voice name="th-TH-NiwatNeural">สวัสดี</voice></speak>'
)
HEADERS = {
    "Ocp-Apim-Subscription-Key": TEST_AZURE_KEY,
    "Content-Type": "application/ssml+xml",
    "X-Microsoft-OutputFormat": "raw-24khz-16bit-mono-pcm",
    "User-Agent": "tests",
}


def post(fake: FakeAzureSpeechServer, body: str = GOOD_SSML, **headers: str) -> httpx.Response:
    sent = {**HEADERS, **headers}
    sent = {name: value for name, value in sent.items() if value}
    return httpx.post(f"{fake.base_url}/cognitiveservices/v1", content=body.encode(), headers=sent)


def test_a_good_request_gets_the_tone_and_a_request_id(fake_azure_speech):
    reply = post(fake_azure_speech)

    assert reply.status_code == 200
    assert reply.content == tone("สวัสดี")
    assert reply.headers["X-RequestId"] == f"{1:032x}"
    assert fake_azure_speech.count == 1


@pytest.mark.parametrize(
    ("body", "headers", "status", "problem"),
    [
        (GOOD_SSML, {"Content-Type": "text/plain"}, 415, "Content-Type 'text/plain'"),
        (GOOD_SSML, {"X-Microsoft-OutputFormat": "wav"}, 400, "'wav' is not a known format"),
        (GOOD_SSML, {"User-Agent": "x" * 255}, 400, "255 characters or longer"),
        ("<speak><voice>", {}, 400, "not well-formed XML"),
        (GOOD_SSML.replace(' xmlns="http://www.w3.org/2001/10/synthesis"', ""), {}, 400, "root"),
        (GOOD_SSML.replace("NiwatNeural", "GhostNeural"), {}, 400, "unknown voice"),
        (
            GOOD_SSML.replace("สวัสดี", '<prosody rate="+300%">สวัสดี</prosody>'),
            {},
            400,
            "outside 0.5x..2x",
        ),
    ],
    ids=["content-type", "format", "user-agent", "xml", "namespace", "voice", "rate"],
)
def test_what_azure_refuses_the_fake_refuses_and_reports(
    fake_azure_speech, body, headers, status, problem
):
    reply = post(fake_azure_speech, body, **headers)

    assert reply.status_code == status
    assert reply.content == b""
    assert fake_azure_speech.problems
    assert all(p.startswith("request 1: ") for p in fake_azure_speech.problems)
    assert problem in fake_azure_speech.problems[0]
    fake_azure_speech.problems.clear()


def test_a_wrong_key_is_401_and_not_recorded_with_the_request(fake_azure_speech):
    reply = post(fake_azure_speech, **{"Ocp-Apim-Subscription-Key": "nope"})

    assert reply.status_code == 401
    [recorded] = fake_azure_speech.requests
    assert "ocp-apim-subscription-key" not in recorded.headers
    assert recorded.key_given


def test_the_voices_listing_needs_the_key_and_has_azures_shape(fake_azure_speech):
    url = f"{fake_azure_speech.base_url}/cognitiveservices/voices/list"

    refused = httpx.get(url)
    listed = httpx.get(url, headers={"Ocp-Apim-Subscription-Key": TEST_AZURE_KEY})

    assert refused.status_code == 401
    assert listed.json() == list(VOICES)
    for voice in listed.json():
        assert {"Name", "ShortName", "Gender", "Locale", "LocaleName", "VoiceType"} <= set(voice)
        assert voice["ShortName"].startswith(voice["Locale"] + "-")


def test_scripted_failures_are_served_in_order_then_success(fake_azure_speech):
    fake_azure_speech.fail(429, headers={"Retry-After": "3"}).fail(502, body="upstream")

    first, second, third = (post(fake_azure_speech) for _ in range(3))

    assert (first.status_code, first.headers["Retry-After"]) == (429, "3")
    assert (second.status_code, second.text) == (502, "upstream")
    assert third.status_code == 200


def test_the_delay_holds_each_synthesis(fake_azure_speech):
    fake_azure_speech.delay = 0.3

    started = time.monotonic()
    post(fake_azure_speech)

    assert time.monotonic() - started >= 0.3


def test_an_unserved_failure_is_a_problem():
    with FakeAzureSpeechServer() as fake:
        fake.fail(500)

    assert fake.verify() == ["1 scripted failure(s) never served"]
