"""One TLS context per HTTP library and process, shared by every client that calls a provider.

httpx and httpx2 (the HTTP client under the openai and anthropic SDKs) build a new
``SSLContext`` for each client unless given one, loading the machine's CA certificates
each time: 40-50 ms of CPU, most of the cost of making a provider's client. Built once
here, each with its library's own defaults (``create_ssl_context()``), and shared: one
context serves any number of connections and threads, as httpx's documentation advises.
"""

from __future__ import annotations

import functools
import ssl

import httpx
import httpx2


@functools.cache
def httpx_context() -> ssl.SSLContext:
    """For clients on httpx (ElevenLabs' SDK, Azure Speech, Mubert)."""
    return httpx.create_ssl_context()


@functools.cache
def httpx2_context() -> ssl.SSLContext:
    """For clients on httpx2 (the openai and anthropic SDKs)."""
    return httpx2.create_ssl_context()
