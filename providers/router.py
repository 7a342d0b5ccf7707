"""Which provider answers a conversation: the routing table and fallback chain from settings,
providers without a key skipped (with a logged reason), ``demo`` when no key is set at all.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from providers.base import ChatProvider
from providers.demo import DEMO_MODEL, DemoProvider
from providers.profiles import ANTHROPIC_MESSAGES, CHAT_COMPLETIONS, DEMO, PROFILES, PROVIDER_NAMES
from providers.resilience import ProviderBinding

logger = logging.getLogger(__name__)

# The adapter for each wire format a profile may name, imported when a provider is first
# built: the SDKs take about 1.6 s of CPU to import (Anthropic's 1.4), which every
# management command (and the admin, through its imports) would otherwise pay. Web and
# worker processes load those of the configured providers at start-up instead
# (``load_adapters``), so no request or run waits for them.
ADAPTERS: dict[str, str] = {
    CHAT_COMPLETIONS: "providers.openai_compat.OpenAICompatProvider",
    ANTHROPIC_MESSAGES: "providers.anthropic_messages.AnthropicProvider",
}


def configured_adapters() -> list[str]:
    """The adapters a route of this process may build: those of the providers with a key
    (``route`` skips the others, and the demo director needs no SDK)."""
    wires = {profile.wire for name, profile in PROFILES.items() if is_configured(name)}
    return [path for wire, path in ADAPTERS.items() if wire in wires]


def load_adapters() -> list[str]:
    """Import the configured providers' adapters, and with them their SDKs, now; returns
    their paths. An adapter of a provider without a key is imported if it is ever built."""
    paths = configured_adapters()
    for path in paths:
        import_string(path)
    return paths


# Set by ``rerouted``: what every route of this context becomes (a recording or a replay).
_reroute: ContextVar[Callable[[list[ProviderBinding]], list[ProviderBinding]] | None] = ContextVar(
    "reroute", default=None
)


@contextmanager
def rerouted(wrap: Callable[[list[ProviderBinding]], list[ProviderBinding]]) -> Iterator[None]:
    """Every ``route`` in this context (and the threads it starts with its context) passed
    through ``wrap``: how an evaluation records or replays provider responses."""
    token = _reroute.set(wrap)
    try:
        yield
    finally:
        _reroute.reset(token)


class ProviderUnavailable(ValueError):
    """An explicitly requested provider is unknown or has no key configured."""


def _config(name: str) -> dict[str, Any]:
    return dict((getattr(settings, "ADSTUDIO_PROVIDERS", {}) or {}).get(name) or {})


def is_configured(name: str) -> bool:
    return name == DEMO or (name in PROFILES and bool(_config(name).get("api_key")))


def model_for(name: str) -> str:
    if name == DEMO:
        return _config(name).get("model") or DEMO_MODEL
    return _config(name).get("model") or PROFILES[name].default_model


def get_provider(name: str) -> ChatProvider:
    """The adapter for ``name``, built from settings (one client, and pool, per config)."""
    if name == DEMO:
        return DemoProvider()
    if name not in PROFILES:
        raise ProviderUnavailable(
            f"unknown provider {name!r}: choose one of {', '.join(PROVIDER_NAMES)}"
        )
    config = _config(name)
    with _build_lock:
        return _build(
            name,
            config.get("api_key", ""),
            config.get("base_url", ""),
            float(getattr(settings, "ADSTUDIO_PROVIDER_TIMEOUT", 60.0)),
            float(getattr(settings, "ADSTUDIO_PROVIDER_CONNECT_TIMEOUT", 10.0)),
            bool(config.get("strict_tools")),
        )


# The cache alone does not stop threads that miss it together from each building a client:
# a worker starting its runs at once would build one per run (an SSL context and a
# connection pool each, tens of milliseconds of CPU), and keep them.
_build_lock = threading.Lock()


@functools.lru_cache(maxsize=32)
def _build(
    name: str,
    api_key: str,
    base_url: str,
    timeout: float,
    connect_timeout: float,
    strict_tools: bool = False,
) -> ChatProvider:
    profile = PROFILES[name]
    if strict_tools:  # ADSTUDIO_STRICT_TOOLS
        profile = dataclasses.replace(profile, strict_tools=True)
    return import_string(ADAPTERS[profile.wire])(
        profile=profile,
        api_key=api_key,
        base_url=base_url,
        name=name,
        timeout=timeout,
        connect_timeout=connect_timeout,
    )


def primary_for(*, language: str, market: str = "") -> str:
    """The routing table's provider for a language (optionally language:MARKET)."""
    routes: dict[str, str] = getattr(settings, "ADSTUDIO_PROVIDER_ROUTES", {}) or {}
    lang = language.strip().lower().replace("_", "-")
    base = lang.split("-", 1)[0]
    market = market.strip().upper()
    keys = [f"{lang}:{market}", f"{base}:{market}"] if market else []
    keys += [lang, base, "default"]
    for key in keys:
        if key in routes:
            return routes[key]
    return "openai"


def binding(name: str) -> ProviderBinding:
    return ProviderBinding(name=name, model=model_for(name), provider=get_provider(name))


def route(
    *, language: str, market: str = "", requested: str | None = None
) -> list[ProviderBinding]:
    """Primary provider first, then the fallback chain (deduplicated, unconfigured skipped).

    ``requested`` names a provider explicitly (an ad's choice): unknown or without a key,
    it raises ``ProviderUnavailable`` naming the env var to set. With no key configured
    for any provider, the route is the offline ``demo`` director.
    """
    found = _route(language=language, market=market, requested=requested)
    wrap = _reroute.get()
    return wrap(found) if wrap is not None else found


def _route(*, language: str, market: str, requested: str | None) -> list[ProviderBinding]:
    if requested:
        if requested not in PROVIDER_NAMES:
            raise ProviderUnavailable(
                f"unknown provider {requested!r}: choose one of {', '.join(PROVIDER_NAMES)}"
            )
        if not is_configured(requested):
            raise ProviderUnavailable(
                f"provider {requested!r} has no API key: set {PROFILES[requested].key_env} "
                "or choose another provider"
            )
        primary = requested
    else:
        primary = primary_for(language=language, market=market)
    fallbacks: list[str] = list(getattr(settings, "ADSTUDIO_PROVIDER_FALLBACKS", []) or [])
    if primary != DEMO and not any(is_configured(name) for name in PROFILES):
        logger.info(
            "no provider API key is set (%s): using the offline demo director",
            ", ".join(profile.key_env for profile in PROFILES.values()),
        )
        return [binding(DEMO)]
    chain: list[str] = []
    seen: set[str] = set()
    for name in [primary, *fallbacks]:
        if name in seen:
            continue
        seen.add(name)
        if name not in PROVIDER_NAMES:
            logger.warning("skipping provider %r: not a known provider", name)
        elif name == DEMO and name != primary:
            continue  # the demo answers only when chosen, never as a silent fallback
        elif not is_configured(name):
            logger.info(
                "skipping provider %r for language %r: %s is not set",
                name,
                language,
                PROFILES[name].key_env,
            )
        else:
            chain.append(name)
    if not chain:  # the table and chain name only unconfigured providers: use any with a key
        chain = [name for name in PROFILES if is_configured(name)]
    return [binding(name) for name in chain]
