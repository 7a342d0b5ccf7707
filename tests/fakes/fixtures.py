"""Pytest fixtures for the fake provider servers (registered in tests/conftest.py).

``fake_openai`` (OpenAI-compatible) and ``fake_anthropic`` (Messages API) yield a started
server and fail the test at teardown if a scripted turn was never requested, an unscripted
request arrived, or a request broke the message protocol. ``fake_elevenlabs`` (text to
speech) fails it if a scripted reply was never requested. ``fake_providers`` also points the
openai, qwen and kimi settings at ``fake_openai``, with retry waits small enough that no
test sleeps for long.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.fake_anthropic import FakeAnthropicServer
from testbed.fake_elevenlabs import FakeElevenLabsServer
from testbed.fake_openai import FakeOpenAIServer
from testbed.fake_openai_speech import FakeOpenAISpeechServer


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail("fake OpenAI server:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_providers(fake_openai: FakeOpenAIServer, settings) -> FakeOpenAIServer:
    """Settings for every real provider pointed at ``fake_openai`` (key: TEST_API_KEY)."""
    settings.ADSTUDIO_PROVIDERS = fake_openai.provider_settings()
    settings.ADSTUDIO_PROVIDER_RETRY = {
        "max_attempts": 3,
        "max_total_seconds": 5.0,
        "base_delay": 0.001,
        "max_delay": 0.01,
    }
    settings.ADSTUDIO_PROVIDER_TIMEOUT = 5.0
    return fake_openai


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicServer]:
    server = FakeAnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail("fake Anthropic server:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_openai_speech() -> Iterator[FakeOpenAISpeechServer]:
    """OpenAI's text-to-speech on a loopback port; fails the test at teardown if a request
    was one the API would refuse, or a scripted failure was never requested."""
    server = FakeOpenAISpeechServer().start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail("fake OpenAI speech server:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_azure_speech():
    """A fake Azure AI Speech server (testbed/fake_azure_speech.py) for this test alone; the
    test fails at teardown if a request was refused as Azure would refuse it or a scripted
    failure was never served."""
    from testbed.fake_azure_speech import FakeAzureSpeechServer

    server = FakeAzureSpeechServer().start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail("fake Azure Speech server:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_elevenlabs() -> Iterator[FakeElevenLabsServer]:
    server = FakeElevenLabsServer().start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail("fake ElevenLabs server:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_mubert():
    """A fake Mubert Music API (testbed/fake_mubert.py) for this test alone; the test fails
    at teardown if a request was refused as Mubert would refuse it (a credential aside), a
    download link was asked with the credentials, or a scripted failure was never served."""
    from testbed.fake_mubert import FakeMubertServer

    server = FakeMubertServer().start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail("fake Mubert server:\n  " + "\n  ".join(problems), pytrace=False)
