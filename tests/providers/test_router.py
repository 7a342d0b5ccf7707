"""Routing from settings: the language table, markets, explicit choices, missing keys, demo."""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from providers import ProviderUnavailable, get_provider, route
from providers.demo import DemoProvider
from providers.openai_compat import OpenAICompatProvider
from providers.profiles import PROFILES

ROUTES = {
    **dict.fromkeys(("th", "id", "vi", "es", "pt", "pl", "cs", "ro"), "qwen"),
    "zh": "kimi",
    "es:MX": "openai",
    "default": "openai",
}


@pytest.fixture
def keys(settings):
    """Configure the named providers (others get no key)."""

    def configure(*names: str) -> None:
        settings.ADSTUDIO_PROVIDERS = {
            name: {
                "api_key": f"sk-{name}-secret-value" if name in names else "",
                "base_url": "",
                "model": "",
            }
            for name in ("openai", "qwen", "kimi")
        }
        settings.ADSTUDIO_PROVIDER_ROUTES = ROUTES
        settings.ADSTUDIO_PROVIDER_FALLBACKS = ["openai", "qwen", "kimi"]

    return configure


def names(bindings) -> list[str]:
    return [b.name for b in bindings]


@pytest.mark.parametrize(
    ("language", "market", "expected"),
    [
        ("th", "TH", ["qwen", "openai", "kimi"]),
        ("zh", "", ["kimi", "openai", "qwen"]),
        ("en", "US", ["openai", "qwen", "kimi"]),
        ("es", "ES", ["qwen", "openai", "kimi"]),
        ("es", "MX", ["openai", "qwen", "kimi"]),
        ("pt-BR", "BR", ["qwen", "openai", "kimi"]),
        ("PT", "", ["qwen", "openai", "kimi"]),
    ],
)
def test_language_and_market_pick_the_primary(keys, language, market, expected):
    keys("openai", "qwen", "kimi")

    assert names(route(language=language, market=market)) == expected


def test_bindings_carry_the_model_from_settings_or_the_profile_default(keys, settings):
    keys("openai", "qwen", "kimi")
    settings.ADSTUDIO_PROVIDERS["qwen"]["model"] = "qwen3-max"

    bindings = {b.name: b for b in route(language="th")}

    assert bindings["qwen"].model == "qwen3-max"
    assert bindings["openai"].model == "gpt-4.1-mini"
    assert bindings["kimi"].model == "kimi-k2-0905-preview"
    assert isinstance(bindings["qwen"].provider, OpenAICompatProvider)
    assert bindings["qwen"].provider.base_url.startswith("https://dashscope-intl.aliyuncs.com")


def test_unconfigured_providers_are_skipped_with_a_logged_reason(keys, caplog):
    keys("openai")

    with caplog.at_level(logging.INFO, logger="providers.router"):
        bindings = route(language="th")

    assert names(bindings) == ["openai"]
    assert "DASHSCOPE_API_KEY is not set" in caplog.text
    assert "MOONSHOT_API_KEY is not set" in caplog.text
    assert "sk-openai-secret-value" not in caplog.text


def test_no_key_at_all_routes_to_the_demo(keys):
    keys()

    bindings = route(language="th", market="TH")

    assert names(bindings) == ["demo"]
    assert isinstance(bindings[0].provider, DemoProvider)


def test_a_requested_provider_comes_first(keys):
    keys("openai", "qwen", "kimi")

    assert names(route(language="th", requested="kimi")) == ["kimi", "openai", "qwen"]


def test_a_requested_provider_without_a_key_names_the_env_var(keys):
    keys("openai")

    with pytest.raises(ProviderUnavailable, match="set DASHSCOPE_API_KEY"):
        route(language="th", requested="qwen")


def test_an_unknown_requested_provider_is_refused(keys):
    keys("openai")

    with pytest.raises(ProviderUnavailable, match="unknown provider 'claude'") as caught:
        route(language="en", requested="claude")
    assert isinstance(caught.value, ValueError)


def test_demo_can_always_be_requested_and_is_never_a_silent_fallback(keys, settings):
    keys("openai")
    settings.ADSTUDIO_PROVIDER_FALLBACKS = ["demo", "qwen"]

    assert names(route(language="en", requested="demo")) == ["demo"]
    assert names(route(language="en")) == ["openai"]


def test_get_provider_reuses_one_client_per_configuration(keys, settings):
    keys("openai")

    first = get_provider("openai")
    again = get_provider("openai")
    settings.ADSTUDIO_PROVIDERS["openai"]["base_url"] = "http://127.0.0.1:11434/v1"
    moved = get_provider("openai")

    assert first is again
    assert moved is not first and moved.base_url == "http://127.0.0.1:11434/v1"
    assert "secret" not in repr(first)


def test_threads_asking_at_once_share_one_client(keys, settings, monkeypatch):
    """A worker starts its runs together: each asks for the provider before any has it."""
    keys("openai")
    settings.ADSTUDIO_PROVIDERS["openai"]["base_url"] = "http://127.0.0.1:9/v1"  # a new config
    built = []

    real_init = OpenAICompatProvider.__init__

    def slow_init(self, **kwargs):
        built.append(kwargs["name"])
        time.sleep(0.05)  # as an SSL context and a pool take, long enough for others to ask
        real_init(self, **kwargs)

    monkeypatch.setattr(OpenAICompatProvider, "__init__", slow_init)
    start = threading.Barrier(8)

    def ask():
        start.wait()
        return get_provider("openai")

    with ThreadPoolExecutor(max_workers=8) as pool:
        providers = list(pool.map(lambda _: ask(), range(8)))

    assert built == ["openai"]
    assert all(provider is providers[0] for provider in providers)


# Django set up once, then a forked child per code: each starts from the state a new
# process has after django.setup() (no thread runs by then to be lost in the fork), and
# the set-up, a second of each process, is paid once.
_FORKED = """
import os, sys, django
django.setup()
children = []
for code in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.dup2(write, 1)
            exec(code, {"__name__": "__main__"})
            sys.stdout.flush()
        except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    os.close(write)
    children.append((code, pid, read))
reports = []
for code, pid, read in children:
    with os.fdopen(read) as out:
        reports.append(out.read().strip())
    if os.waitpid(pid, 0)[1] != 0:
        sys.exit(f"failed: {code}")
print(repr(reports))
"""


def _sdks_imported_after(*codes: str) -> list[str]:
    """For each of ``codes``, in a process of its own with the project's settings and no
    provider key in its environment (all started at once, forked from one that set Django
    up): "openai anthropic" as each is in sys.modules after it, e.g. "False False"."""
    report = "print('openai' in sys.modules, 'anthropic' in sys.modules)"
    key_names = {profile.key_env for profile in PROFILES.values()}
    env = {name: value for name, value in os.environ.items() if name not in key_names}
    done = subprocess.run(
        [sys.executable, "-c", _FORKED, *(f"import sys; {code}; {report}" for code in codes)],
        env={**env, "DJANGO_SETTINGS_MODULE": "adstudio.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


WORKER_START = "from conversations.tasks import _load_at_worker_start; _load_at_worker_start()"
WARMED = "import threading; [t.join() for t in threading.enumerate() if t.name == 'warm-up']"


def _with_keys(*providers: str) -> str:
    """Code giving ``providers`` a key in the settings, as their variables would."""
    entries = {name: {"api_key": "sk-test-not-a-real-key"} for name in providers}
    return f"from django.conf import settings; settings.ADSTUDIO_PROVIDERS = {entries!r}"


@pytest.mark.slow
def test_the_provider_sdks_load_in_web_and_worker_processes_not_in_commands():
    """They take about 1.6 s to import: a management command (Django set up, the admin
    included) does without them; a worker loads them before its first run, and a web
    process in a thread of its own once it serves (a process a reload starts serves
    sooner). Only the configured providers' SDKs: Anthropic's alone is 1.4 s of CPU, and
    a process whose providers all speak Chat Completions never builds its adapter."""
    both = _with_keys("openai", "anthropic")
    command, wsgi, asgi, worker, openai, qwen, anthropic, none = _sdks_imported_after(
        both,
        f"{both}; import adstudio.wsgi; {WARMED}",
        f"{both}; from adstudio.asgi import application; {WARMED}",
        f"{both}; {WORKER_START}",
        f"{_with_keys('openai')}; {WORKER_START}",
        f"{_with_keys('qwen', 'kimi')}; {WORKER_START}",
        f"{_with_keys('anthropic')}; import adstudio.wsgi; {WARMED}",
        WORKER_START,  # no key: the demo director
    )
    assert command == "False False"
    assert (wsgi, asgi, worker) == ("True True", "True True", "True True")
    assert (openai, qwen, anthropic, none) == (
        "True False",
        "True False",
        "False True",
        "False False",
    )
