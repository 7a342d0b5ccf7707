"""The documented production environment (deploy/adstudio.env.example) passes
`manage.py check --deploy`, and the Procfile starts what exists (docs/DEPLOYMENT.md)."""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from celery.app.utils import find_app
from celery.concurrency import get_implementation
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory, override_settings
from gunicorn.config import Config as GunicornConfig

import adstudio.celery
from adstudio.env import env_proxy_ssl_header

ROOT = Path(__file__).resolve().parents[2]
ENV_EXAMPLE = ROOT / "deploy" / "adstudio.env.example"
PROCFILE = ROOT / "Procfile"


def env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines, as systemd's EnvironmentFile reads this file (no quotes)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        assert sep and name.strip().isidentifier(), f"{path.name}: not NAME=value: {line!r}"
        values[name.strip()] = value.strip()
    return values


def production_env(**changes: str | None) -> dict[str, str]:
    """The example's environment with a real-looking SECRET_KEY in place of its
    placeholder; a change to None removes the variable."""
    env = {**env_file(ENV_EXAMPLE), "SECRET_KEY": secrets.token_urlsafe(50)}
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``command`` with ``env`` alone (nothing of the test's own environment but PATH and
    HOME), as a service manager starts it."""
    base = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    return subprocess.run(
        command, cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    return run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], env)


@pytest.mark.slow
def test_the_documented_production_environment_passes_check_deploy():
    result = check_deploy(production_env())

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.slow
def test_check_deploy_names_each_development_default_left_in_production():
    """The example copied without its key replaced, DEBUG on, and the HTTPS settings left
    at their defaults (off, for `make run` and the test suite): each is reported."""
    https = ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    env = production_env(
        SECRET_KEY=env_file(ENV_EXAMPLE)["SECRET_KEY"],
        DEBUG="1",
        SECURE_HSTS_SECONDS=None,
        **dict.fromkeys(https),
    )

    result = check_deploy(env)

    assert result.returncode == 1, result.stdout + result.stderr
    reported = {
        "security.W009": "SECRET_KEY",
        "security.W018": "DEBUG",
        "security.W004": "SECURE_HSTS_SECONDS",
        "security.W008": "SECURE_SSL_REDIRECT",
        "security.W012": "SESSION_COOKIE_SECURE",
        "security.W016": "CSRF_COOKIE_SECURE",
    }
    for warning, setting in reported.items():
        assert warning in result.stderr, setting


def test_the_proxy_header_marks_requests_from_the_proxy_secure(monkeypatch):
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", " X-Forwarded-Proto = https ")
    header = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
    assert header == ("HTTP_X_FORWARDED_PROTO", "https")

    requests = RequestFactory()
    with override_settings(SECURE_PROXY_SSL_HEADER=header):
        assert requests.get("/", headers={"X-Forwarded-Proto": "https"}).is_secure()
        assert not requests.get("/", headers={"X-Forwarded-Proto": "http"}).is_secure()
        assert not requests.get("/").is_secure()


@pytest.mark.parametrize(
    "value", ["X-Forwarded-Proto", "HTTP_X_FORWARDED_PROTO=https", "X-Forwarded-Proto=", "=https"]
)
def test_a_malformed_proxy_header_is_a_configuration_error(monkeypatch, value):
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", value)

    with pytest.raises(ImproperlyConfigured, match="is not HEADER=VALUE") as error:
        env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
    assert f"SECURE_PROXY_SSL_HEADER={value!r}" in str(error.value)


def test_no_proxy_header_is_trusted_unless_one_is_set(monkeypatch):
    monkeypatch.delenv("SECURE_PROXY_SSL_HEADER", raising=False)
    assert env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER") is None


# --- Procfile ------------------------------------------------------------------------------


def procfile() -> dict[str, list[str]]:
    processes = {}
    for line in PROCFILE.read_text().splitlines():
        if line.strip():
            name, sep, command = line.partition(":")
            assert sep and name.isidentifier(), f"Procfile: not NAME: COMMAND: {line!r}"
            processes[name] = shlex.split(command)
    return processes


def readme_commands() -> list[list[str]]:
    """The commands of README's "Production processes" block, without their comments."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Production processes", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def option(argv: list[str], *names: str) -> str:
    for i, arg in enumerate(argv):
        if arg in names:
            return argv[i + 1]
    raise AssertionError(f"{' '.join(argv)} has no {names[0]}")


def test_the_procfile_runs_the_processes_readme_documents():
    processes = procfile()
    assert set(processes) == {"web", "worker"}  # no beat: the workers sweep (adstudio.sweeps)

    documented = [c for c in readme_commands() if c[0] in ("gunicorn", "celery")]
    assert len(documented) == 2
    for command in documented:
        name = "web" if command[0] == "gunicorn" else command[3]  # celery -A adstudio NAME
        assert processes[name][: len(command)] == command, (name, processes[name], command)


@pytest.mark.slow
def test_the_web_process_serves_the_asgi_application_from_uvicorn_workers():
    argv = procfile()["web"]
    assert argv[0] == "gunicorn"
    config = GunicornConfig()
    parsed = config.parser().parse_args(argv[1:])
    for name, value in vars(parsed).items():
        if value is not None and name != "args":
            config.set(name.lower(), value)
    # An event loop per process: a client following a run holds no thread, not the process.
    assert config.worker_class.__module__ == "uvicorn_worker._workers"
    assert config.worker_class.__name__ == "UvicornWorker"
    assert parsed.args == ["adstudio.asgi:application"]

    # gunicorn's own check: it parses the options and imports the application.
    gunicorn = Path(sys.executable).parent / "gunicorn"
    result = run([str(gunicorn), "--check-config", *argv[1:]], {})
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_worker_names_the_project_app():
    argv = procfile()["worker"]
    assert argv[:2] == ["celery", "-A"] and argv[3] == "worker"

    assert find_app(argv[2]) is adstudio.celery.app


def test_the_worker_pool_exists_and_the_workers_sweep():
    argv = procfile()["worker"]
    pool = get_implementation(option(argv, "--pool", "-P"))
    assert pool.__module__ == "celery.concurrency.thread"
    assert int(option(argv, "--concurrency", "-c")) >= 1

    from adstudio import sweeps

    assert {"runs", "renders", "render-files"} <= set(sweeps._sweeps)
    assert not adstudio.celery.app.conf.beat_schedule  # nothing needs a beat process
