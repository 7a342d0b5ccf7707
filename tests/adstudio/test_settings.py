"""Settings come from the environment and fail clearly when it is wrong.

Each environment is read by the settings module itself, executed here with exactly that
environment (``settings_with``): a malformed value must raise ``ImproperlyConfigured``,
which ``manage.py`` turns into one line on stderr and exit status 2 (shown once, by a
real ``manage.py``, in ``test_a_configuration_error_is_one_line_and_exit_status_2``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS

from tests.support.settings_module import settings_with, start_up_error

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


@pytest.mark.slow
def test_a_configuration_error_is_one_line_and_exit_status_2():
    """What every start-up error below becomes under ``manage.py``."""
    result = manage("check", env={"DATABASE_URL": "postgres://u:secret@db:notaport/x"})
    assert result.returncode == 2
    assert result.stderr.startswith("Configuration error: DATABASE_URL=")
    assert "is malformed" in result.stderr
    assert "Traceback" not in result.stderr
    assert "secret" not in result.stderr  # the password never appears in an error
    assert result.stdout == ""


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
    error = start_up_error({"DATABASE_URL": url})
    assert expected in error
    assert "DATABASE_URL" in error
    assert "secret" not in error  # the password never appears in an error


@pytest.mark.parametrize("url", ["amqp://guest@localhost//", "redis://h:port/0", "redis://"])
def test_malformed_broker_url_is_a_clear_start_up_error(url):
    assert "CELERY_BROKER_URL" in start_up_error({"CELERY_BROKER_URL": url})


@pytest.mark.parametrize("name", ["CELERY_BROKER_URL", "CACHE_URL"])
def test_a_malformed_redis_url_never_repeats_its_password(name):
    error = start_up_error({name: "redis://:s3cr3tpw#x@cache:6379/0"})
    assert name in error and "port is not a number" in error
    assert "s3cr3tpw" not in error


@pytest.mark.parametrize("rate", ["30", "30/", "30/fortnight", "many/minute", "0/minute"])
def test_an_invalid_run_rate_is_a_start_up_error(rate):
    error = start_up_error({"ADSTUDIO_RUN_RATE": rate})
    assert "ADSTUDIO_RUN_RATE" in error and "expected REQUESTS/PERIOD" in error


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("forever", "ADSTUDIO_TOKEN_TTL='forever' is not a duration"),
        ("1.5d", "is not a duration"),
        ("-1d", "is not a duration"),
        ("30s", "ADSTUDIO_TOKEN_TTL='30s' is 30 s: it must be between 60 s and"),
        ("400d", "is 34560000 s: it must be between"),
    ],
)
def test_an_invalid_token_ttl_is_a_start_up_error(value, says):
    assert says in start_up_error({"ADSTUDIO_TOKEN_TTL": value})


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, 30 * 86400), ("12h", 43200), ("90m", 5400), ("3600", 3600)]
)
def test_tokens_expire_after_thirty_days_unless_told(value, seconds):
    env = {} if value is None else {"ADSTUDIO_TOKEN_TTL": value}
    assert settings_with(env)["ADSTUDIO_TOKEN_TTL"] == seconds


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
        ({"ADSTUDIO_RENDER_LOUDNESS_LUFS": "3"}, "is louder than full scale"),
        ({"ADSTUDIO_RENDER_LOUDNESS_LUFS": "-90"}, "must be at least -70.0"),
        (
            {"ADSTUDIO_CONTEXT_BUDGET_TOKENS": "800"},
            "ADSTUDIO_CONTEXT_BUDGET_TOKENS=800 must be at least 2000",
        ),
        ({"ADSTUDIO_RENDER_PREROLL_S": "-0.1"}, "ADSTUDIO_RENDER_PREROLL_S=-0.1 must be at"),
        ({"ADSTUDIO_RENDER_SPEAKER_GAP_S": "7"}, "ADSTUDIO_RENDER_SPEAKER_GAP_S=7.0 is longer"),
        ({"ADSTUDIO_RENDER_SPEAKER_GAP_S": "soon"}, "'soon' is not a number"),
        (
            {"ADSTUDIO_RENDER_LINK_SECONDS": "1"},
            "ADSTUDIO_RENDER_LINK_SECONDS=1 must be at least 10",
        ),
    ],
)
def test_timings_that_cannot_work_are_start_up_errors(env, says):
    assert says in start_up_error(env)


def test_invalid_debug_flag_is_named():
    assert "DEBUG='maybe' is not a boolean" in start_up_error({"DEBUG": "maybe"})


def test_embedded_default_uses_sqlite_and_eager_tasks():
    values = settings_with()
    assert values["DATABASES"]["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert values["CELERY_TASK_ALWAYS_EAGER"] is True


def test_broker_url_turns_off_eager_tasks():
    values = settings_with({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"})
    assert values["CELERY_TASK_ALWAYS_EAGER"] is False


def test_cors_is_closed_unless_origins_are_configured():
    def cors(origins: str) -> tuple:
        values = settings_with({"CORS_ALLOWED_ORIGINS": origins})
        return (
            values["CORS_ALLOWED_ORIGINS"],
            values.get("CORS_ALLOW_ALL_ORIGINS", False),
            values.get("CORS_ALLOWED_ORIGIN_REGEXES", []),
        )

    assert cors("") == ([], False, [])
    assert cors("https://studio.example.com,https://staging.example.com") == (
        ["https://studio.example.com", "https://staging.example.com"],
        False,
        [],
    )


def test_deploy_check_flags_the_development_secret_key(settings):
    settings.SECRET_KEY = settings_with()["SECRET_KEY"]  # none set: the development key
    errors = io.StringIO()
    call_command("check", "--deploy", stdout=io.StringIO(), stderr=errors)
    assert "security.W009" in errors.getvalue()


def test_project_checks_and_migrations_are_clean(db):
    # On the migrated test database: makemigrations checks the history applied there.
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        call_command("check", stdout=io.StringIO())
        call_command("makemigrations", "--check", "--dry-run", stdout=io.StringIO())
    assert not [w for w in warned if "consistent migration history" in str(w.message)]


def test_openapi_schema_is_valid_and_has_no_warnings(tmp_path):
    GENERATOR_STATS.reset()  # what other tests' schemas warned of is theirs
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )
    schema = (tmp_path / "schema.yml").read_text()
    for path in (
        "/api/ai/generate",
        "/api/ads/{ad_id}/chat",
        "/api/runs/{id}/events",
        "/api/drafts/{id}/activate/",
        "/api/voices/",
    ):
        assert f"  {path}:" in schema, path


def test_files_are_on_this_hosts_disk_unless_a_bucket_is_named():
    assert settings_with()["STORAGES"]["default"] == {
        "BACKEND": "adstudio.file_storage.WholeFileSystemStorage"
    }
    bucket = settings_with(
        {
            "MEDIA_S3_BUCKET": "adstudio-media",
            "MEDIA_S3_ENDPOINT_URL": "https://minio.internal:9000",
            "MEDIA_S3_REGION": "eu-west-1",
            "MEDIA_S3_PREFIX": "/prod/media/",
            "AWS_SECRET_ACCESS_KEY": "never-in-settings",
        }
    )
    assert bucket["STORAGES"]["default"] == {
        "BACKEND": "adstudio.s3_storage.MediaS3Storage",
        "OPTIONS": {
            "bucket_name": "adstudio-media",
            "file_overwrite": True,
            "endpoint_url": "https://minio.internal:9000",
            "region_name": "eu-west-1",
            "location": "prod/media",
        },
    }
    assert "never-in-settings" not in repr(bucket)  # boto3 reads the keys itself


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MEDIA_S3_BUCKET": "Media_Bucket"}, "MEDIA_S3_BUCKET='Media_Bucket' is not a bucket"),
        (
            {"MEDIA_S3_BUCKET": "media", "MEDIA_S3_ENDPOINT_URL": "minio:9000"},
            "MEDIA_S3_ENDPOINT_URL='minio:9000' is not an S3 endpoint",
        ),
        (
            {"MEDIA_S3_BUCKET": "media", "MEDIA_S3_ENDPOINT_URL": "https://u:pw@s3:x"},
            "MEDIA_S3_ENDPOINT_URL='https://u:***@s3:x' is not an S3 endpoint",
        ),
        ({"MEDIA_S3_BUCKET": "media", "MEDIA_S3_REGION": "EU West"}, "is not a region name"),
        ({"MEDIA_S3_BUCKET": "media", "MEDIA_S3_PREFIX": "a/../b"}, "is not a key prefix"),
        ({"MEDIA_S3_ENDPOINT_URL": "https://s3:9000"}, "but MEDIA_S3_BUCKET is not"),
        ({"ADSTUDIO_RENDER_STALE_AFTER": "1"}, "ADSTUDIO_RENDER_STALE_AFTER=1 must be at least 2"),
    ],
)
def test_a_storage_that_cannot_work_is_a_start_up_error(env, says):
    assert says in start_up_error(env)


def test_database_connections_keep_alive_on_both_ends_unless_the_url_says_otherwise():
    url = "postgres://u@db.internal:5432/adstudio"
    options = settings_with({"DATABASE_URL": url})["DATABASES"]["default"]["OPTIONS"]
    assert (options["keepalives"], options["keepalives_idle"]) == (1, 30)
    assert (options["keepalives_interval"], options["keepalives_count"]) == (10, 3)
    assert options["tcp_user_timeout"] == 30000
    assert options["options"] == (
        "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3 "
        "-c tcp_user_timeout=30000"
    )

    tuned = settings_with({"DATABASE_URL": f"{url}?keepalives_idle=120"})
    options = tuned["DATABASES"]["default"]["OPTIONS"]
    assert options["keepalives_idle"] == 120 and "tcp_keepalives_idle=120" in options["options"]
    server_side = settings_with({"DATABASE_URL": f"{url}?options=-c%20tcp_user_timeout=5000"})
    options = server_side["DATABASES"]["default"]["OPTIONS"]["options"]
    assert options.count("tcp_user_timeout") == 1 and "tcp_user_timeout=5000" in options


@pytest.mark.django_db
def test_the_server_drops_a_dead_clients_connection_within_a_minute():
    """What the server is asked on every connection (its side of the keepalives)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('tcp_keepalives_idle'), "
            "current_setting('tcp_keepalives_interval'), "
            "current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')"
        )
        assert cursor.fetchone() == ("30", "10", "3", "30000")  # the last in ms
