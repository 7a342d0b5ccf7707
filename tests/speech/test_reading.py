"""Lines read for a render (speech.reading) against a provider over real HTTP: which line
each provider reads and why the guide voice reads the others, retries with the policy,
the cache, the estimate, a stop asked for mid-reading, and the span and metrics of each
call."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured
from prometheus_client import REGISTRY

from adstudio import observability
from speech import cache
from speech.base import SpeechRequest
from speech.configuration import from_environment
from speech.music_reading import read_for_render
from speech.reading import GUIDE, CastVoice, estimate, lines_of, read_line
from testbed.fake_openai_speech import rate_limited

pytestmark = pytest.mark.usefixtures("media")

CORAL = CastVoice(provider="openai", provider_voice_id="coral")
RACHEL = CastVoice(provider="elevenlabs", provider_voice_id="21m00Tcm4TlvDq8ikWAM")
SAMPLE = CastVoice(provider="sample", provider_voice_id="v1")


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def speaking(settings, fake_openai_speech):
    settings.ADSTUDIO_SPEECH_PROVIDERS = fake_openai_speech.settings()
    return fake_openai_speech


def track(n: int, voice: str, text: str, speed: float = 1.0) -> dict:
    return {"id": f"track-{n}", "voiceId": voice, "text": text, "speed": speed}


def test_each_line_goes_to_its_provider_or_says_why_the_guide_voice_reads_it(speaking):
    lines = lines_of(
        [
            track(0, "1", "Hello there.", speed=1.25),
            track(1, "2", "Terms apply."),
            track(2, "3", "Visit us."),
            track(3, "404", "Nobody."),
        ],
        language="en",
        cast={"1": CORAL, "2": RACHEL, "3": SAMPLE},
    )

    assert [line.note for line in lines] == [
        "",
        "guide voice: ElevenLabs not configured",
        "guide voice: no speech adapter for sample",
        "guide voice: not a voice of the catalogue",
    ]
    request = lines[0].request
    assert (request.provider, request.voice_id, request.speed) == ("openai", "coral", 1.25)
    assert request.model == "tts-1-hd"  # the adapter's default, in the cache key


def test_a_rate_limit_is_waited_out_and_the_line_kept(speaking, settings):
    settings.ADSTUDIO_PROVIDER_RETRY = {"max_attempts": 3, "base_delay": 0.01}
    speaking.fail(rate_limited(retry_after="0"))
    [line] = lines_of([track(0, "1", "Hello there.")], language="en", cast={"1": CORAL})

    read = read_line(line)

    assert read.reader == "openai" and speaking.count == 2
    assert read.characters == len("Hello there.") and not read.cached
    assert read.request_id.startswith("req_")
    assert cache.cached_audio(line.request) == read.audio
    again = read_line(line)
    assert again.cached and again.audio == read.audio and again.characters == 0
    assert speaking.count == 2


def test_the_cache_key_is_what_makes_the_audio(speaking):
    base = SpeechRequest(
        provider="openai", voice_id="coral", text="Hi.", language="en", settings={"a": 1, "b": 2}
    )
    same = SpeechRequest(
        provider="openai", voice_id="coral", text="Hi.", language="en", settings={"b": 2, "a": 1}
    )
    faster = SpeechRequest(
        provider="openai", voice_id="coral", text="Hi.", language="en", speed=1.1
    )

    assert base.cache_key() == same.cache_key()
    assert (
        len(
            {
                base.cache_key(),
                faster.cache_key(),
                SpeechRequest(
                    provider="openai", voice_id="ash", text="Hi.", language="en"
                ).cache_key(),
            }
        )
        == 3
    )


def test_lines_are_read_at_once_up_to_the_bound_and_a_stop_reads_no_more(speaking):
    speaking.delay = 0.3
    lines = lines_of(
        [track(n, "1", f"Line number {n}.") for n in range(6)], language="en", cast={"1": CORAL}
    )

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        read_for_render(lines, None, concurrency=2, progress=stop, every_s=0.05)
    speaking.delay = 0.0
    # Those begun before the stop finish; the others were never asked for.
    assert speaking.count <= 2

    reads, music = read_for_render(lines, None, concurrency=3)
    assert music is None
    assert [r.reader for r in reads] == ["openai"] * 6
    assert [r.track_id for r in reads] == [f"track-{n}" for n in range(6)]


def test_the_estimate_counts_the_lines_not_cached_at_the_price_table(speaking, settings):
    lines = lines_of(
        [track(0, "1", "Hello there."), track(1, "1", "Terms apply."), track(2, "2", "Hi.")],
        language="en",
        cast={"1": CORAL, "2": RACHEL},
    )
    read_line(lines[1])  # read once: cached

    quoted = estimate(lines)

    assert quoted.characters == len("Hello there.")
    assert quoted.cost_usd == Decimal("0.000360")  # 12 characters at $30 a million
    assert quoted.exact is True
    assert [(line["reader"], line["cached"]) for line in quoted.lines] == [
        ("openai", False),
        ("openai", True),
        (GUIDE, False),
    ]
    settings.ADSTUDIO_SPEECH_PRICES = {}  # a model without a price: not exact
    assert estimate(lines).exact is False


def test_each_call_is_a_span_and_counted(speaking, metrics_on, tracing_on):
    traced = tracing_on()
    labels = {"provider": "openai", "model": "tts-1-hd"}
    before = REGISTRY.get_sample_value("adstudio_speech_characters_total", labels) or 0
    [line] = lines_of([track(0, "1", "Hello there.")], language="en", cast={"1": CORAL})

    read_line(line, watch=observability.speech_call)

    after = REGISTRY.get_sample_value("adstudio_speech_characters_total", labels)
    assert after - before == len("Hello there.")
    [span] = [s for s in traced.spans() if s.name == "text_to_speech tts-1-hd"]
    assert span.attributes["gen_ai.provider.name"] == "openai"
    assert span.attributes["adstudio.speech.characters"] == len("Hello there.")
    assert "adstudio.speech.text" not in span.attributes  # content only when asked for
    assert speaking.api_key not in str(span.attributes)


def test_bad_variables_stop_the_start_naming_them(monkeypatch):
    monkeypatch.setenv("ELEVENLABS_BASE_URL", "api.elevenlabs.io")
    with pytest.raises(
        ImproperlyConfigured, match=re.escape("ELEVENLABS_BASE_URL='api.elevenlabs.io'")
    ):
        from_environment()
    monkeypatch.delenv("ELEVENLABS_BASE_URL")
    monkeypatch.setenv("AZURE_SPEECH_KEY", "k" * 32)
    monkeypatch.delenv("AZURE_SPEECH_REGION", raising=False)
    monkeypatch.delenv("AZURE_SPEECH_ENDPOINT", raising=False)
    with pytest.raises(ImproperlyConfigured, match="AZURE_SPEECH_REGION"):
        from_environment()
    monkeypatch.setenv("AZURE_SPEECH_REGION", "westeurope")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.delenv("ADSTUDIO_OPENAI_SPEECH_BASE_URL", raising=False)
    entries = from_environment()["ADSTUDIO_SPEECH_PROVIDERS"]
    assert entries["openai"]["base_url"] == "http://127.0.0.1:9/v1"  # the chat models' URL
    assert entries["azure"]["region"] == "westeurope"
    assert entries["openai"]["timeout_s"] == "30"
    monkeypatch.setenv("ADSTUDIO_SPEECH_TIMEOUT_S", "0.1")
    with pytest.raises(ImproperlyConfigured, match="ADSTUDIO_SPEECH_TIMEOUT_S"):
        from_environment()


def test_a_deployment_prices_what_the_table_leaves_unpriced(monkeypatch):
    monkeypatch.setenv(
        "ADSTUDIO_SPEECH_PRICES", "elevenlabs:eleven_multilingual_v2=100, azure:neural=16.5"
    )
    table = from_environment()["ADSTUDIO_SPEECH_PRICES"]
    assert table["elevenlabs"]["eleven_multilingual_v2"] == Decimal("100")
    assert table["azure"]["neural"] == Decimal("16.5")
    assert table["openai"]["tts-1-hd"] == Decimal("30.00")  # the table's own kept
    for bad, named in (
        ("elevenlabs=100", "is not provider:model=USD"),
        ("polly:neural=4", "unknown provider 'polly'"),
        ("azure:neural=cheap", "'cheap' is not a price"),
        ("azure:neural=-1", "'-1' is not a price"),
    ):
        monkeypatch.setenv("ADSTUDIO_SPEECH_PRICES", bad)
        with pytest.raises(ImproperlyConfigured, match=re.escape(named)):
            from_environment()
