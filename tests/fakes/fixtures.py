"""Pytest fixtures for the fake provider servers (registered in tests/conftest.py).

Each yields a started server for its test alone and fails the test at teardown with what
the server's ``verify()`` found: for ``fake_openai`` (OpenAI-compatible) and
``fake_anthropic`` (Messages API), a scripted turn never requested, an unscripted request
or one that broke the message protocol; for the speech and music fakes (ElevenLabs,
OpenAI's speech, Azure AI Speech, Mubert), a request the provider would refuse or a
scripted failure never served. ``fake_providers`` also points the openai, qwen and kimi
settings at ``fake_openai``, with retry waits small enough that no test sleeps for long.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from testbed.fake_anthropic import FakeAnthropicServer
from testbed.fake_azure_speech import FakeAzureSpeechServer
from testbed.fake_elevenlabs import FakeElevenLabsServer
from testbed.fake_mubert import FakeMubertServer
from testbed.fake_openai import FakeOpenAIServer
from testbed.fake_openai_speech import FakeOpenAISpeechServer


class _Fake(Protocol):
    def start(self) -> Any: ...
    def stop(self) -> None: ...
    def verify(self) -> list[str]: ...


def _served[F: _Fake](server: F, label: str) -> Iterator[F]:
    """``server`` started for the test, stopped with it, its problems failing the test."""
    server.start()
    try:
        yield server
    finally:
        server.stop()
    problems = server.verify()
    if problems:
        pytest.fail(f"fake {label} server:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    yield from _served(FakeOpenAIServer(), "OpenAI")


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
    yield from _served(FakeAnthropicServer(), "Anthropic")


@pytest.fixture
def fake_openai_speech() -> Iterator[FakeOpenAISpeechServer]:
    yield from _served(FakeOpenAISpeechServer(), "OpenAI speech")


@pytest.fixture
def fake_azure_speech() -> Iterator[FakeAzureSpeechServer]:
    yield from _served(FakeAzureSpeechServer(), "Azure Speech")


@pytest.fixture
def fake_elevenlabs() -> Iterator[FakeElevenLabsServer]:
    yield from _served(FakeElevenLabsServer(), "ElevenLabs")


@pytest.fixture
def fake_mubert() -> Iterator[FakeMubertServer]:
    yield from _served(FakeMubertServer(), "Mubert")
