"""The Azure AI Speech adapter against the fake Azure server: the request on the wire (SSML
parsed back), the result, every error class, the key kept out of messages and logs, and
the registry building the adapter from settings."""

from __future__ import annotations

import logging
import socket
import xml.etree.ElementTree as ET

import pytest

from providers.base import (
    AuthenticationFailed,
    BadRequest,
    ProviderError,
    RateLimited,
    TransientError,
)
from speech.azure import AzureSpeech, billable_characters, ssml, voice_content
from speech.base import SAMPLE_RATE, SpeechRequest
from testbed.fake_azure_speech import SECONDS_PER_CHARACTER, TEST_AZURE_KEY, tone

SSML = "{http://www.w3.org/2001/10/synthesis}"
MSTTS = "{https://www.w3.org/2001/mstts}"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
TRICKY = 'Save <50% & more: "today" only, it\'s </voice> time'


def line(text: str = "สวัสดีครับ", **overrides) -> SpeechRequest:
    fields = {
        "provider": "azure",
        "voice_id": "th-TH-PremwadeeNeural",
        "text": text,
        "language": "th",
    }
    fields.update(overrides)
    return SpeechRequest(**fields)


@pytest.fixture
def azure(fake_azure_speech) -> AzureSpeech:
    adapter = AzureSpeech(api_key=TEST_AZURE_KEY, base_url=fake_azure_speech.base_url)
    yield adapter
    adapter.close()


def sent_ssml(fake) -> ET.Element:
    return ET.fromstring(fake.syntheses[-1].body)


# --- the request on the wire ----------------------------------------------------------


def test_the_request_carries_azure_headers_and_well_formed_ssml(azure, fake_azure_speech):
    azure.synthesize(line(TRICKY, voice_id="en-US-JennyNeural", language="en"))

    [sent] = fake_azure_speech.syntheses
    assert (sent.method, sent.path) == ("POST", "/cognitiveservices/v1")
    assert sent.key_given
    assert sent.headers["content-type"] == "application/ssml+xml"
    assert sent.headers["x-microsoft-outputformat"] == "raw-24khz-16bit-mono-pcm"
    assert sent.headers["user-agent"].startswith("AdStudio/")
    root = ET.fromstring(sent.body)
    assert root.tag == f"{SSML}speak"
    assert root.get("version") == "1.0"
    assert root.get(XML_LANG) == "en-US"  # from the voice's name: no locale was given
    [voice] = root.findall(f"{SSML}voice")
    assert voice.get("name") == "en-US-JennyNeural"
    assert list(voice) == []  # speed 1, no style: the text alone, no prosody to bill
    assert voice.text == TRICKY  # <, &, quotes and a closing tag arrive as text
    assert "&lt;50% &amp; more" in sent.body


def test_the_key_travels_only_in_its_header(azure, fake_azure_speech):
    azure.synthesize(line())

    [sent] = fake_azure_speech.syntheses
    assert TEST_AZURE_KEY not in sent.body
    assert TEST_AZURE_KEY not in repr(sent.headers)
    assert TEST_AZURE_KEY not in repr(azure)


@pytest.mark.parametrize(
    ("speed", "rate"),
    [(1.2, "+20%"), (0.75, "-25%"), (0.3, "-50%"), (5.0, "+100%"), (1.004, None)],
)
def test_speed_becomes_a_relative_prosody_rate_within_azures_range(
    azure, fake_azure_speech, speed, rate
):
    azure.synthesize(line(speed=speed))

    [voice] = sent_ssml(fake_azure_speech).findall(f"{SSML}voice")
    prosody = voice.find(f"{SSML}prosody")
    if rate is None:
        assert prosody is None
    else:
        assert prosody.get("rate") == rate
        assert prosody.text == "สวัสดีครับ"


def test_style_settings_wrap_the_text_in_express_as(azure, fake_azure_speech):
    settings = {"style": "cheerful", "styledegree": 3, "role": "Boy", "stability": 0.5}
    azure.synthesize(line(voice_id="zh-CN-YunxiNeural", text="你好", speed=1.5, settings=settings))

    voice = sent_ssml(fake_azure_speech).find(f"{SSML}voice")
    express = voice.find(f"{MSTTS}express-as")
    assert express.attrib == {"style": "cheerful", "styledegree": "2", "role": "Boy"}
    assert express.find(f"{SSML}prosody").get("rate") == "+50%"
    assert "".join(voice.itertext()) == "你好"


def test_no_style_no_express_as_even_with_a_degree():
    content = voice_content(line(settings={"styledegree": "1.5", "role": "Girl"}))

    assert "express-as" not in content
    assert content == "สวัสดีครับ"


@pytest.mark.parametrize(
    ("overrides", "lang"),
    [
        ({"locale": "tl-PH", "voice_id": "fil-PH-BlessicaNeural"}, "fil-PH"),
        ({"voice_id": "sr-Latn-RS-NicholasNeural", "language": "sr"}, "sr-Latn-RS"),
        ({"locale": "de-CH", "voice_id": "my-custom-voice", "language": "de"}, "de-CH"),
        ({"voice_id": "my-custom-voice", "language": "de"}, "de"),
    ],
)
def test_xml_lang_is_the_voices_else_the_locale_else_the_language(overrides, lang):
    root = ET.fromstring(ssml(line(**overrides)))

    assert root.get(XML_LANG) == lang


def test_a_voice_name_with_quotes_stays_one_attribute():
    root = ET.fromstring(ssml(line(voice_id='a" b="c')))

    assert root.find(f"{SSML}voice").attrib == {"name": 'a" b="c'}


def test_control_characters_xml_cannot_hold_are_dropped():
    root = ET.fromstring(ssml(line("bell\x07 and\x0b tab\t")))

    assert root.find(f"{SSML}voice").text == "bell and tab\t"


# --- the result -----------------------------------------------------------------------


def test_the_result_is_the_pcm_with_azures_request_id(azure, fake_azure_speech):
    text = "Hello there"
    result = azure.synthesize(line(text, voice_id="en-US-JennyNeural", language="en"))

    assert result.audio == tone(text)
    assert result.sample_rate == SAMPLE_RATE
    assert result.model == "neural"
    assert result.request_id == f"{1:032x}"
    assert result.duration_s == pytest.approx(len(text) * SECONDS_PER_CHARACTER)
    assert result.characters == len(text)


def test_a_faster_rate_gives_shorter_audio(azure):
    normal = azure.synthesize(line("one two three four"))
    fast = azure.synthesize(line("one two three four", speed=2.0))

    assert fast.duration_s == pytest.approx(normal.duration_s / 2, abs=1e-3)


def test_characters_count_the_billed_markup_and_chinese_twice():
    plain = line("Hello")
    faster = line("Hello", speed=1.2)
    styled = line("Hello", settings={"style": "sad"})

    assert billable_characters(voice_content(plain)) == 5
    assert billable_characters(voice_content(faster)) == len('<prosody rate="+20%">Hello</prosody>')
    assert billable_characters(voice_content(styled)) == len(
        '<mstts:express-as style="sad">Hello</mstts:express-as>'
    )
    assert billable_characters(voice_content(line("你好!"))) == 5
    assert billable_characters(voice_content(line("a & b"))) == len("a &amp; b")


def test_characters_of_the_result_follow_the_ssml_sent(azure, fake_azure_speech):
    result = azure.synthesize(line("你好", voice_id="zh-CN-YunxiNeural", speed=0.5))

    body = fake_azure_speech.syntheses[-1].body
    inner = body[body.index(">", body.index("<voice")) + 1 : body.index("</voice>")]
    assert inner == '<prosody rate="-50%">你好</prosody>'
    assert result.characters == len(inner) + 2  # each Chinese character counts twice


# --- errors ---------------------------------------------------------------------------


def test_a_wrong_key_is_authentication_failed_naming_the_variable(fake_azure_speech):
    wrong = "wrongkey0123456789abcdef01234567"
    adapter = AzureSpeech(api_key=wrong, base_url=fake_azure_speech.base_url)

    with pytest.raises(AuthenticationFailed) as caught:
        adapter.synthesize(line())

    error = caught.value
    assert (error.provider, error.status) == ("azure", 401)
    assert "AZURE_SPEECH_KEY" in str(error)
    assert "isn't authorized" in str(error)
    assert "another region" in str(error)
    assert wrong not in str(error)
    assert error.request_id == f"{1:032x}"


def test_400_with_an_empty_body_says_what_azure_means(azure, fake_azure_speech):
    fake_azure_speech.fail(400)

    with pytest.raises(BadRequest) as caught:
        azure.synthesize(line())

    assert caught.value.status == 400
    assert "a required parameter is missing, empty or null" in str(caught.value)
    assert "SSML" in str(caught.value)


def test_400_keeps_azures_plain_text_reason(azure, fake_azure_speech):
    fake_azure_speech.fail(400, body="Invalid voice name.")

    with pytest.raises(BadRequest) as caught:
        azure.synthesize(line())

    assert str(caught.value).endswith("Invalid voice name.")


def test_a_voice_azure_does_not_have_is_a_bad_request(azure, fake_azure_speech):
    with pytest.raises(BadRequest):
        azure.synthesize(line(voice_id="th-TH-NobodyNeural"))

    assert fake_azure_speech.problems == [
        "request 1: unknown voice 'th-TH-NobodyNeural'"
    ]  # the fake refused it as Azure would
    fake_azure_speech.problems.clear()


def test_429_is_rate_limited_with_azures_retry_after(azure, fake_azure_speech):
    fake_azure_speech.fail(429, headers={"Retry-After": "7"})

    with pytest.raises(RateLimited) as caught:
        azure.synthesize(line())

    assert caught.value.retry_after == 7
    assert caught.value.retryable
    assert "quota or rate of requests" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "says"),
    [(500, "HTTP 500"), (502, "bad gateway"), (503, "service unavailable")],
)
def test_server_errors_are_transient(azure, fake_azure_speech, status, says):
    fake_azure_speech.fail(status)

    with pytest.raises(TransientError) as caught:
        azure.synthesize(line())

    assert caught.value.status == status
    assert says in str(caught.value)


def test_a_server_error_then_success_on_the_next_try(azure, fake_azure_speech):
    fake_azure_speech.fail(502)

    with pytest.raises(TransientError):
        azure.synthesize(line())
    assert azure.synthesize(line()).audio == tone("สวัสดีครับ")
    assert fake_azure_speech.count == 2


def test_a_reply_slower_than_the_timeout_is_transient(fake_azure_speech):
    fake_azure_speech.delay = 1.0
    adapter = AzureSpeech(
        api_key=TEST_AZURE_KEY, base_url=fake_azure_speech.base_url, timeout_s="0.2"
    )

    with pytest.raises(TransientError) as caught:
        adapter.synthesize(line())

    assert "no reply within 0.2 s" in str(caught.value)
    assert caught.value.retryable


def test_an_endpoint_that_refuses_connections_is_transient():
    with socket.socket() as probe:  # a port the OS just gave out, nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    adapter = AzureSpeech(api_key=TEST_AZURE_KEY, base_url=f"http://127.0.0.1:{port}")

    with pytest.raises(TransientError) as caught:
        adapter.synthesize(line())

    assert "could not reach" in str(caught.value)


def test_200_without_audio_is_a_bad_request(azure, fake_azure_speech):
    fake_azure_speech.fail(200)

    with pytest.raises(BadRequest) as caught:
        azure.synthesize(line(voice_id="en-US-JennyMultilingualNeural"))

    assert "may not speak this text's language" in str(caught.value)


def test_the_key_is_never_in_a_message_or_a_log(fake_azure_speech, caplog):
    caplog.set_level(logging.DEBUG)
    adapter = AzureSpeech(api_key=TEST_AZURE_KEY, base_url=fake_azure_speech.base_url)
    fake_azure_speech.fail(400, body=f"key {TEST_AZURE_KEY} is not valid for this voice")
    fake_azure_speech.fail(429, body=f"throttled {TEST_AZURE_KEY}")
    fake_azure_speech.fail(502, body=TEST_AZURE_KEY)
    errors: list[ProviderError] = []

    for _ in range(3):
        with pytest.raises(ProviderError) as caught:
            adapter.synthesize(line())
        errors.append(caught.value)
    adapter.synthesize(line())

    assert [type(e) for e in errors] == [BadRequest, RateLimited, TransientError]
    assert "***" in str(errors[0])  # what Azure said is kept, the key blanked
    for error in errors:
        assert TEST_AZURE_KEY not in str(error)
        assert TEST_AZURE_KEY not in repr(error.args)
    assert caplog.records  # httpx logged the requests
    assert TEST_AZURE_KEY not in caplog.text


# --- construction and the registry ----------------------------------------------------


def test_the_region_makes_the_regional_endpoint():
    adapter = AzureSpeech(api_key=TEST_AZURE_KEY, region="westeurope")

    assert adapter.base_url == "https://westeurope.tts.speech.microsoft.com"


def test_without_region_or_endpoint_the_error_names_both_variables():
    with pytest.raises(ValueError, match=r"AZURE_SPEECH_REGION.*AZURE_SPEECH_ENDPOINT"):
        AzureSpeech(api_key=TEST_AZURE_KEY)


def test_the_registry_builds_a_working_adapter_from_settings(fake_azure_speech, settings):
    from speech.registry import is_configured, speech_provider

    settings.ADSTUDIO_SPEECH_PROVIDERS = {
        "azure": {
            "api_key": TEST_AZURE_KEY,
            "base_url": fake_azure_speech.base_url,
            "region": "westeurope",
            "timeout_s": 5,
        }
    }

    adapter = speech_provider("azure")

    assert is_configured("azure")
    assert isinstance(adapter, AzureSpeech)
    assert adapter.base_url == fake_azure_speech.base_url  # the endpoint wins over the region
    assert adapter.timeout_s == 5.0
    result = adapter.synthesize(line())
    assert result.audio == tone("สวัสดีครับ")
    assert fake_azure_speech.count == 1


def test_the_registry_leaves_azure_out_without_a_key(settings):
    from speech.registry import speech_provider

    settings.ADSTUDIO_SPEECH_PROVIDERS = {"azure": {"api_key": "", "region": "westeurope"}}

    assert speech_provider("azure") is None
