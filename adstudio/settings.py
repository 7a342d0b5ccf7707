"""Django settings, read from the environment (12-factor).

With no environment at all the project runs embedded: a SQLite file under ``var/``,
Celery tasks executed in-process, and the offline ``demo`` provider. A deployment sets
``DATABASE_URL`` (Postgres), ``CELERY_BROKER_URL`` (Redis), ``SECRET_KEY``,
``DEBUG=0`` and ``ALLOWED_HOSTS``.
"""

from __future__ import annotations

from pathlib import Path

from adstudio.env import (
    broker_url,
    database_config,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

# The development key starts with "django-insecure-", which `manage.py check --deploy`
# reports (security.W009), so it cannot slip into production unnoticed.
DEV_SECRET_KEY = "django-insecure-adstudio-development-key-do-not-deploy"
SECRET_KEY = env_str("SECRET_KEY") or DEV_SECRET_KEY
DEBUG = env_bool("DEBUG", default=False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "voices",
    "drafts",
    "conversations",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "adstudio.urls"
WSGI_APPLICATION = "adstudio.wsgi.application"
ASGI_APPLICATION = "adstudio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_config("DATABASE_URL", default_sqlite_path=VAR_DIR / "db.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "AdStudio API",
    "DESCRIPTION": "Audio ads made with an LLM creative director.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# --- Celery -------------------------------------------------------------------------
# Without a broker, tasks run eagerly in the calling process (the embedded default).
CELERY_BROKER_URL = broker_url("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Agent runs are long and I/O bound: acknowledge after the task ran, hand the message back
# if the worker dies, and take one message at a time so a busy worker doesn't hoard runs.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("ADSTUDIO_TASK_SOFT_TIME_LIMIT", 600, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("ADSTUDIO_TASK_TIME_LIMIT", 660, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Longer than the hard time limit, so Redis does not redeliver a run still in progress.
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 120,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
}

# --- Agent runs ------------------------------------------------------------------------
ADSTUDIO_MAX_ROUNDS = env_int("ADSTUDIO_MAX_ROUNDS", 8, minimum=1)
ADSTUDIO_MAX_TOOL_FAILURES = env_int("ADSTUDIO_MAX_TOOL_FAILURES", 3, minimum=1)
# Prompt tokens of history sent per request; older turns are summarised.
ADSTUDIO_CONTEXT_BUDGET_TOKENS = env_int("ADSTUDIO_CONTEXT_BUDGET_TOKENS", 16000, minimum=500)
# Prompt + completion tokens one run may spend before it stops.
ADSTUDIO_RUN_TOKEN_BUDGET = env_int("ADSTUDIO_RUN_TOKEN_BUDGET", 300000, minimum=1000)
ADSTUDIO_HEARTBEAT_INTERVAL = env_float("ADSTUDIO_HEARTBEAT_INTERVAL", 10.0, minimum=0.1)
# A running run whose heartbeat is older than this is taken for dead and resumed.
ADSTUDIO_RUN_STALE_AFTER = env_float("ADSTUDIO_RUN_STALE_AFTER", 120.0, minimum=1.0)
# A queued run older than this whose task may have been lost is enqueued again.
ADSTUDIO_QUEUED_RUN_GRACE = env_float("ADSTUDIO_QUEUED_RUN_GRACE", 60.0, minimum=1.0)
ADSTUDIO_RECOVERY_INTERVAL = env_float("ADSTUDIO_RECOVERY_INTERVAL", 60.0, minimum=1.0)
# USD per million tokens. Cached input is what providers bill for prompt-cache hits.
ADSTUDIO_MODEL_PRICES = {
    "gpt-4.1": {"input": 2.00, "cached_input": 0.50, "output": 8.00},
    "gpt-4.1-mini": {"input": 0.40, "cached_input": 0.10, "output": 1.60},
    "gpt-4o": {"input": 2.50, "cached_input": 1.25, "output": 10.00},
    "gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.60},
    "qwen-max": {"input": 1.60, "cached_input": 0.64, "output": 6.40},
    "qwen-plus": {"input": 0.40, "cached_input": 0.16, "output": 1.20},
    "kimi-k2-0905-preview": {"input": 0.60, "cached_input": 0.15, "output": 2.50},
    "moonshot-v1-32k": {"input": 1.00, "cached_input": 1.00, "output": 3.00},
}
CELERY_BEAT_SCHEDULE = {
    "recover-runs": {
        "task": "conversations.tasks.recover_runs",
        "schedule": ADSTUDIO_RECOVERY_INTERVAL,
    },
}
