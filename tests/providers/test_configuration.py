"""The providers' settings (providers/configuration.py): env parsing, the errors for bad
values, and the app reading them at start-up (``ProvidersConfig.ready``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from providers import configuration

ROOT = Path(__file__).resolve().parents[2]


def start_up(monkeypatch, env: dict[str, str]) -> None:
    """The providers app's start-up with ``env`` on top of this process's."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    apps.get_app_config("providers").ready()


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"ADSTUDIO_STRICT_TOOLS": "anthropic"},
            "strict tools are a chat-completions option (openai, qwen, kimi); anthropic",
        ),
        (
            {"ADSTUDIO_STRICT_TOOLS": "openai,gemini"},
            "ADSTUDIO_STRICT_TOOLS names unknown provider 'gemini'",
        ),
        ({"ADSTUDIO_PROVIDER_ROUTES": "th=gemini"}, "ADSTUDIO_PROVIDER_ROUTES names unknown"),
        ({"ADSTUDIO_PROVIDER_FALLBACKS": "qwen,x"}, "ADSTUDIO_PROVIDER_FALLBACKS names unknown"),
        ({"MOONSHOT_BASE_URL": "moonshot.ai"}, "MOONSHOT_BASE_URL='moonshot.ai' is not a URL"),
    ],
)
def test_a_bad_variable_stops_the_start_naming_it(monkeypatch, env, says):
    with pytest.raises(ImproperlyConfigured) as caught:
        start_up(monkeypatch, env)

    assert says in str(caught.value)


def test_the_start_sets_the_routers_settings_from_the_environment(monkeypatch, settings):
    del settings.ADSTUDIO_PROVIDER_ROUTES
    del settings.ADSTUDIO_PROVIDERS
    settings.ADSTUDIO_PROVIDER_FALLBACKS = ["kimi"]  # as a settings module might set it

    start_up(
        monkeypatch,
        {
            "ADSTUDIO_PROVIDER_ROUTES": "th=qwen",
            "ADSTUDIO_PROVIDER_FALLBACKS": "openai",
            "ADSTUDIO_KIMI_MODEL": "kimi-k2",
        },
    )

    assert settings.ADSTUDIO_PROVIDER_ROUTES == {"th": "qwen", "default": "openai"}
    assert settings.ADSTUDIO_PROVIDERS["kimi"]["model"] == "kimi-k2"
    assert settings.ADSTUDIO_PROVIDER_FALLBACKS == ["kimi"]  # the settings' own kept


@pytest.mark.slow
def test_a_bad_variable_is_one_line_and_exit_status_2_under_manage_py():
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env["ADSTUDIO_PROVIDER_ROUTES"] = "th=gemini"

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 2
    assert result.stderr.startswith(
        "Configuration error: ADSTUDIO_PROVIDER_ROUTES names unknown provider 'gemini'"
    )
    assert "Traceback" not in result.stderr


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
