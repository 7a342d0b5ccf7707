"""Every client that calls a provider shares its HTTP library's one TLS context
(``providers.tls``): the CA certificates are loaded once a process, not once a client,
and a provider is still trusted only when a certificate authority the machine trusts
vouches for it."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator

import pytest
import trustme

from providers import tls
from providers.anthropic_messages import AnthropicProvider
from providers.base import GenerateRequest, TransientError, UserMessage
from providers.openai_compat import OpenAICompatProvider
from speech.azure import AzureSpeech
from speech.elevenlabs import ElevenLabsSpeech
from speech.mubert import MubertMusic
from speech.openai_speech import OpenAISpeech
from testbed.fake_openai import FakeOpenAIServer, turn


@pytest.fixture
def fresh_contexts() -> Iterator[None]:
    """The shared contexts built again, under this test's environment."""
    tls.httpx_context.cache_clear()
    tls.httpx2_context.cache_clear()
    yield
    tls.httpx_context.cache_clear()
    tls.httpx2_context.cache_clear()


@pytest.fixture
def https_openai() -> Iterator[tuple[FakeOpenAIServer, str]]:
    """The fake OpenAI server behind TLS, its certificate issued by a CA of the test's own;
    yields the server and that CA's certificate file."""
    ca = trustme.CA()
    server = FakeOpenAIServer()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    with ca.cert_pem.tempfile() as ca_file, server:
        yield server, ca_file


def ask() -> GenerateRequest:
    return GenerateRequest(model="gpt-test", system="", messages=(UserMessage("Brief"),))


def test_every_providers_client_loads_the_ca_certificates_once(
    fresh_contexts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[object] = []
    load = ssl.SSLContext.load_verify_locations
    this_thread = threading.get_ident()

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        if threading.get_ident() == this_thread:  # not a server's thread of another fixture
            loads.append(args or kwargs)
        load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    for n in range(3):  # each a provider account of its own, on both HTTP libraries
        base = f"https://provider{n}.example/v1"
        OpenAICompatProvider(api_key="key", base_url=base)
        AnthropicProvider(api_key="key", base_url=base)
        OpenAISpeech(api_key="key", base_url=base)
        ElevenLabsSpeech(api_key="key", base_url=base)
        AzureSpeech(api_key="key", base_url=f"https://provider{n}.example")
        MubertMusic(access_token="token", customer_id="customer", base_url=base)

    assert len(loads) == 2  # httpx2's context and httpx's, once each


def test_a_provider_is_trusted_only_when_a_trusted_ca_vouches_for_it(
    fresh_contexts: None,
    https_openai: tuple[FakeOpenAIServer, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, ca_file = https_openai
    server.script(turn("Hello over TLS."))
    base_url = server.base_url.replace("http://", "https://")

    with pytest.raises(TransientError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify"):
        OpenAICompatProvider(api_key="key", base_url=base_url, timeout=5).generate(ask())

    tls.httpx2_context.cache_clear()
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # the machine's trust: now this CA
    reply = OpenAICompatProvider(api_key="key", base_url=base_url, timeout=5).generate(ask())

    assert reply.message.text == "Hello over TLS."
