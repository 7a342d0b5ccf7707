"""The providers' settings, read from the environment: keys, base URLs, models, routes,
fallbacks and strict tools. The app reads them at start-up (``ProvidersConfig.ready``,
through ``from_environment``), so a bad value is a start-up error naming its variable; the
router reads the result from ``django.conf.settings``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from adstudio.env import env_list, env_str
from adstudio.languages import UnknownLanguage, normalise_language
from providers.profiles import PROFILES, PROVIDER_NAMES

# Per provider: the variables naming its base URL and model (docs/providers.md); its key
# is the profile's ``key_env``.
_BASE_URL_AND_MODEL_ENV = {
    "openai": ("OPENAI_BASE_URL", "ADSTUDIO_OPENAI_MODEL"),
    "qwen": ("DASHSCOPE_BASE_URL", "ADSTUDIO_QWEN_MODEL"),
    "kimi": ("MOONSHOT_BASE_URL", "ADSTUDIO_KIMI_MODEL"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ADSTUDIO_ANTHROPIC_MODEL"),
}
# A language without a route of its own goes to "default".
DEFAULT_ROUTES = {
    **dict.fromkeys(("th", "id", "vi", "es", "pt", "pl", "cs", "ro"), "qwen"),
    "zh": "kimi",
    "default": "openai",
}
DEFAULT_FALLBACKS = ["openai", "qwen", "kimi", "anthropic"]


def from_environment() -> dict[str, Any]:
    """The settings the router reads, by name, each from its variables; raises
    ``ImproperlyConfigured`` naming the first variable whose value is bad."""
    return {
        # Keys, base URLs and models (an empty base URL or model: the profile's default);
        # a provider without a key is skipped by the router, and with no key at all the
        # offline demo director answers.
        "ADSTUDIO_PROVIDERS": provider_entries("ADSTUDIO_STRICT_TOOLS"),
        # Language (optionally language:MARKET) -> provider; "default" for every other.
        "ADSTUDIO_PROVIDER_ROUTES": provider_routes("ADSTUDIO_PROVIDER_ROUTES"),
        # Tried in order after the routed provider fails (after its retries).
        "ADSTUDIO_PROVIDER_FALLBACKS": provider_fallbacks("ADSTUDIO_PROVIDER_FALLBACKS"),
    }


def provider_entry(key_env: str, base_url_env: str, model_env: str) -> dict[str, str]:
    base_url = env_str(base_url_env).rstrip("/")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ImproperlyConfigured(
            f"{base_url_env}={base_url!r} is not a URL: expected https://HOST/PATH "
            "(e.g. http://127.0.0.1:11434/v1 for Ollama)."
        )
    return {"api_key": env_str(key_env), "base_url": base_url, "model": env_str(model_env)}


def provider_entries(strict_tools_env: str) -> dict[str, dict]:
    """``ADSTUDIO_PROVIDERS``: each provider's key, base URL, model and strict-tools flag.

    An empty base URL or model means the profile's default."""
    entries: dict[str, dict] = {
        name: provider_entry(profile.key_env, *_BASE_URL_AND_MODEL_ENV[name])
        for name, profile in PROFILES.items()
    }
    for name in strict_tools(strict_tools_env):
        entries[name]["strict_tools"] = True
    return entries


def provider_name(name: str, source: str) -> str:
    if name not in PROVIDER_NAMES:
        raise ImproperlyConfigured(
            f"{source} names unknown provider {name!r}: use one of {', '.join(PROVIDER_NAMES)}."
        )
    return name


def provider_routes(name: str, default: dict[str, str] = DEFAULT_ROUTES) -> dict[str, str]:
    """``th=qwen,zh=kimi,es:MX=openai,default=openai``: language[:MARKET]=provider.

    A language may be spelled any way the catalogue accepts (``Thai``, ``th-TH``): it is
    stored as the code ads carry, or no ad would ever match it."""
    items = env_list(name, [])
    if not items:
        return dict(default)
    routes: dict[str, str] = {}
    for item in items:
        key, sep, provider = item.partition("=")
        language, _, market = key.strip().partition(":")
        if not sep or not language.strip() or not provider.strip():
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not language[:MARKET]=provider "
                "(e.g. th=qwen,zh=kimi,default=openai)."
            )
        language = language.strip().lower()
        if language != "default":
            try:
                language = normalise_language(language).code
            except UnknownLanguage as exc:
                raise ImproperlyConfigured(f"{name}: {item!r}: {exc}") from None
        route_key = f"{language}:{market.strip().upper()}" if market.strip() else language
        routes[route_key] = provider_name(provider.strip().lower(), name)
    routes.setdefault("default", "openai")
    return routes


def provider_fallbacks(name: str) -> list[str]:
    """Tried in order after the routed provider fails; unconfigured ones are skipped."""
    return [provider_name(p.lower(), name) for p in env_list(name, DEFAULT_FALLBACKS)]


def strict_tools(name: str) -> frozenset[str]:
    """Chat-completions providers that get tools in strict mode (``openai``)."""
    names = frozenset(provider_name(p.lower(), name) for p in env_list(name, []))
    if names & {"anthropic", "demo"}:
        raise ImproperlyConfigured(
            f"{name}: strict tools are a chat-completions option (openai, qwen, kimi); "
            f"{', '.join(sorted(names & {'anthropic', 'demo'}))} has none."
        )
    return names
