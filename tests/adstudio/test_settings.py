"""Settings come from the environment and fail clearly when it is wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.worker import database_url

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://u:secret@db:notaport/x", "is malformed"),
        ("mysql://u@db/x", "not a database URL this project supports"),
        ("postgres://u@127.0.0.1:5432/", "names no database"),
        ("not a url", "not a database URL this project supports"),
    ],
)
def test_malformed_database_url_is_a_clear_start_up_error(url, expected):
    result = manage("check", env={"DATABASE_URL": url})
    assert result.returncode == 2
    assert expected in result.stderr
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
    assert "secret" not in result.stderr  # the password never appears in an error


@pytest.mark.parametrize("url", ["amqp://guest@localhost//", "redis://h:port/0", "redis://"])
def test_malformed_broker_url_is_a_clear_start_up_error(url):
    result = manage("check", env={"CELERY_BROKER_URL": url})
    assert result.returncode == 2
    assert "CELERY_BROKER_URL" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["CELERY_BROKER_URL", "CACHE_URL"])
def test_a_malformed_redis_url_never_repeats_its_password(name):
    result = manage("check", env={name: "redis://:s3cr3tpw#x@cache:6379/0"})
    assert result.returncode == 2
    assert name in result.stderr and "port is not a number" in result.stderr
    assert "s3cr3tpw" not in result.stderr


@pytest.mark.parametrize("rate", ["30", "30/", "30/fortnight", "many/minute", "0/minute"])
def test_an_invalid_run_rate_is_a_start_up_error(rate):
    result = manage("check", env={"ADSTUDIO_RUN_RATE": rate})
    assert result.returncode == 2
    assert "ADSTUDIO_RUN_RATE" in result.stderr and "expected REQUESTS/PERIOD" in result.stderr


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"ADSTUDIO_RUN_STALE_AFTER": "nan"}, "ADSTUDIO_RUN_STALE_AFTER='nan' is not a finite"),
        ({"ADSTUDIO_PROVIDER_TIMEOUT": "inf"}, "ADSTUDIO_PROVIDER_TIMEOUT='inf' is not a finite"),
        (
            {"ADSTUDIO_HEARTBEAT_INTERVAL": "30", "ADSTUDIO_RUN_STALE_AFTER": "20"},
            "must be shorter than ADSTUDIO_RUN_STALE_AFTER",
        ),
        (
            {"ADSTUDIO_TASK_SOFT_TIME_LIMIT": "600", "ADSTUDIO_TASK_TIME_LIMIT": "300"},
            "must be longer than ADSTUDIO_TASK_SOFT_TIME_LIMIT",
        ),
    ],
)
def test_timings_that_cannot_work_are_start_up_errors(env, says):
    result = manage("check", env=env)
    assert result.returncode == 2
    assert says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("anthropic", "strict tools are a chat-completions option (openai, qwen, kimi); anthropic"),
        ("openai,gemini", "ADSTUDIO_STRICT_TOOLS names unknown provider 'gemini'"),
    ],
)
def test_strict_tools_name_chat_completions_providers_only(value, says):
    result = manage("check", env={"ADSTUDIO_STRICT_TOOLS": value})
    assert result.returncode == 2
    assert says in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_debug_flag_is_named():
    result = manage("check", env={"DEBUG": "maybe"})
    assert result.returncode == 2
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_embedded_default_uses_sqlite_and_eager_tasks(tmp_path):
    code = (
        "from django.conf import settings; "
        "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = manage("shell", "--no-imports", "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True"]


def test_broker_url_turns_off_eager_tasks():
    code = "from django.conf import settings; print(settings.CELERY_TASK_ALWAYS_EAGER)"
    result = manage(
        "shell", "--no-imports", "-c", code, env={"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_cors_is_closed_unless_origins_are_configured():
    code = (
        "from django.conf import settings; "
        "print(settings.CORS_ALLOWED_ORIGINS, getattr(settings, 'CORS_ALLOW_ALL_ORIGINS', False), "
        "getattr(settings, 'CORS_ALLOWED_ORIGIN_REGEXES', []))"
    )
    closed = manage("shell", "--no-imports", "-c", code, env={"CORS_ALLOWED_ORIGINS": ""})
    configured = manage(
        "shell",
        "--no-imports",
        "-c",
        code,
        env={"CORS_ALLOWED_ORIGINS": "https://studio.example.com,https://staging.example.com"},
    )
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout.strip() == "[] False []"
    assert configured.stdout.strip() == (
        "['https://studio.example.com', 'https://staging.example.com'] False []"
    )


def test_deploy_check_flags_the_development_secret_key():
    result = manage("check", "--deploy", env={"DATABASE_URL": os.environ["DATABASE_URL"]})
    assert "security.W009" in result.stderr + result.stdout


def test_project_checks_and_migrations_are_clean(db):
    # The migrated test database: makemigrations checks the history applied there
    # (against a database that does not exist it waits for the pool's timeout, warns
    # and checks nothing).
    env = {"DATABASE_URL": database_url()}
    check = manage("check", env=env)
    migrations = manage("makemigrations", "--check", "--dry-run", env=env)
    assert check.returncode == 0, check.stderr
    assert migrations.returncode == 0, migrations.stdout + migrations.stderr
    assert "consistent migration history" not in migrations.stderr, migrations.stderr


def test_openapi_schema_is_valid_and_has_no_warnings(tmp_path):
    result = manage(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--file",
        str(tmp_path / "schema.yml"),
        env={"DATABASE_URL": os.environ["DATABASE_URL"]},
    )
    assert result.returncode == 0, result.stderr
    schema = (tmp_path / "schema.yml").read_text()
    for path in (
        "/api/ai/generate",
        "/api/ads/{ad_id}/chat",
        "/api/runs/{id}/events",
        "/api/drafts/{id}/activate/",
        "/api/voices/",
    ):
        assert f"  {path}:" in schema, path
