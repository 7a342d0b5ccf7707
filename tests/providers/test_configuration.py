"""The providers' settings (providers/configuration.py): env parsing and the errors for bad
values."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from providers import configuration


def test_routes_from_env_with_markets_and_an_implicit_default(monkeypatch):
    monkeypatch.setenv("ADSTUDIO_PROVIDER_ROUTES", "th=qwen, zh=kimi, es:mx=openai")

    routes = configuration.provider_routes("ADSTUDIO_PROVIDER_ROUTES", {})

    assert routes == {"th": "qwen", "zh": "kimi", "es:MX": "openai", "default": "openai"}


def test_route_languages_are_stored_as_the_codes_ads_carry(monkeypatch):
    monkeypatch.setenv("ADSTUDIO_PROVIDER_ROUTES", "Thai=qwen, zh-Hant:TW=kimi")

    routes = configuration.provider_routes("ADSTUDIO_PROVIDER_ROUTES", {})

    assert routes == {"th": "qwen", "zh:TW": "kimi", "default": "openai"}


@pytest.mark.parametrize("value", ["th", "th=", "=qwen", "th=claude", "elvish=qwen"])
def test_malformed_routes_are_refused_with_the_variable_named(monkeypatch, value):
    monkeypatch.setenv("ADSTUDIO_PROVIDER_ROUTES", value)

    with pytest.raises(ImproperlyConfigured, match="ADSTUDIO_PROVIDER_ROUTES"):
        configuration.provider_routes("ADSTUDIO_PROVIDER_ROUTES", {})


def test_routes_default_when_unset(monkeypatch):
    monkeypatch.delenv("ADSTUDIO_PROVIDER_ROUTES", raising=False)

    assert configuration.provider_routes("ADSTUDIO_PROVIDER_ROUTES", {"default": "kimi"}) == {
        "default": "kimi"
    }


def test_base_url_must_be_a_url(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:11434")

    with pytest.raises(ImproperlyConfigured, match="OPENAI_BASE_URL"):
        configuration.provider_entry("OPENAI_API_KEY", "OPENAI_BASE_URL", "ADSTUDIO_OPENAI_MODEL")


def test_provider_entry_reads_key_url_and_model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", " sk-local ")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("ADSTUDIO_OPENAI_MODEL", "qwen3:8b")

    entry = configuration.provider_entry(
        "OPENAI_API_KEY", "OPENAI_BASE_URL", "ADSTUDIO_OPENAI_MODEL"
    )

    assert entry == {
        "api_key": "sk-local",
        "base_url": "http://127.0.0.1:11434/v1",
        "model": "qwen3:8b",
    }


def test_unknown_fallback_provider_is_refused():
    with pytest.raises(ImproperlyConfigured, match="unknown provider 'gemini'"):
        configuration.provider_name("gemini", "ADSTUDIO_PROVIDER_FALLBACKS")


def test_every_provider_has_an_entry_and_strict_tools_mark_only_theirs(monkeypatch):
    monkeypatch.setenv("ADSTUDIO_STRICT_TOOLS", "qwen")
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-dash")

    entries = configuration.provider_entries("ADSTUDIO_STRICT_TOOLS")

    assert list(entries) == ["openai", "qwen", "kimi", "anthropic"]
    assert entries["qwen"]["api_key"] == "sk-dash"
    assert [name for name, entry in entries.items() if entry.get("strict_tools")] == ["qwen"]
