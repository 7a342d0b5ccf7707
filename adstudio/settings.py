"""Django settings, read from the environment (12-factor).

With no environment at all the project runs embedded: a SQLite file under ``var/``,
Celery tasks executed in-process, and the offline ``demo`` provider. A deployment sets
``DATABASE_URL`` (Postgres), ``CELERY_BROKER_URL`` (Redis), ``SECRET_KEY``,
``DEBUG=0`` and ``ALLOWED_HOSTS``.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from corsheaders.defaults import default_headers as default_cors_headers
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from whitenoise.compress import Compressor

from adstudio.env import (
    database_config,
    env_bool,
    env_duration,
    env_float,
    env_int,
    env_list,
    env_lockout_parameters,
    env_proxy_ssl_header,
    env_rate,
    env_str,
    media_storage,
    otlp_endpoint,
    redis_url,
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

# --- HTTPS in production (docs/DEPLOYMENT.md) ------------------------------------------
# Off by default, so that `make run` and the test suite work over plain HTTP; a deployment
# behind HTTPS turns each one on, and `manage.py check --deploy` names any left off.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)


# Trusted from any client: only behind a proxy that sets or overwrites the header on every
# request, with the web processes reachable through it alone.
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: runserver leaves static files to WhiteNoise, as in production.
    "whitenoise.runserver_nostatic",
    "adstudio.static_files.StaticFiles",  # django.contrib.staticfiles, without ReDoc
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by us rather than a CDN
    "accounts",
    "voices",
    "workspaces",
    "drafts",
    "providers",
    "speech",
    "conversations",
    "renders",
    "evaluations",
    "adstudio.observability",  # traces and metrics, when configured (below)
    "axes",  # failed password logins, and the lockouts they lead to (below)
]

MIDDLEWARE = [
    # /healthz and /readyz, answered before host checks, HTTPS redirects and sessions.
    "adstudio.asgi.health.HealthCheckMiddleware",
    # A lost database connection: a read tried once more, else 503 with Retry-After.
    "adstudio.db.outage.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (below), with a nonce for the pages'
    # own inline scripts and styles.
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # Static files (the admin's, Swagger UI's) answered before any other work.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A request id (and a session's user id) on every log line of the request.
    "adstudio.log_context.RequestLogContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: a login refused for too many failures answered 429.
    "axes.middleware.AxesMiddleware",
]

# --- Password logins: refused after too many failures (django-axes) -------------------
# Axes' backend first: it refuses a locked-out login before any password is checked, and
# counts each failure. The API's tokens are no password logins and pass by neither.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Failed logins within the cool-off after which logins are refused; each refused one
# starts the cool-off again. An operator unlocks at once with `manage.py axes_reset_*`.
AXES_VERBOSE = False  # no banner at every start (the terminal chat prints to people)
AXES_FAILURE_LIMIT = env_int("ADSTUDIO_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("ADSTUDIO_LOGIN_COOLOFF_SECONDS", 15 * 60, minimum=1))
# What failures are counted against: a user name guessed at from many addresses, and an
# address guessing at many user names, each locked on its own.
AXES_LOCKOUT_PARAMETERS = env_lockout_parameters("ADSTUDIO_LOGIN_LOCKOUT_BY", "username,ip_address")
# Off by default: a success clears every failure matching it, so with ip_address counted
# a guesser holding one valid account would clear its address's count between guesses.
AXES_RESET_ON_SUCCESS = env_bool("ADSTUDIO_LOGIN_RESET_ON_SUCCESS", default=False)
# The address as the web server resolved it from its trusted proxies (FORWARDED_ALLOW_IPS);
# never a header a client could write.
AXES_CLIENT_IP_CALLABLE = "adstudio.login_lockout.client_address"
AXES_LOCKOUT_CALLABLE = "adstudio.login_lockout.lockout_response"

# --- Content-Security-Policy (Django's own; docs/DEPLOYMENT.md) -------------------------
# The admin shows what a model wrote (briefs, scripts, tool arguments): a <script> or an
# event handler that slipped through escaping must not run. Scripts only from this
# origin or carrying the response's nonce (the admin's, Swagger UI's, the players'); no
# inline handlers, no eval. Style elements likewise; style attributes are allowed (the
# players' timeline places its bars with them), as they run nothing and load only what
# img-src allows. data: images: the icons inside Swagger UI's and the admin's CSS.
CONTENT_SECURITY_POLICY = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "style-src-attr": [CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
# 1: browsers report what the policy would block (in their console) and block nothing,
# to try a change of policy on a live site before enforcing it.
ADSTUDIO_CSP_REPORT_ONLY = env_bool("ADSTUDIO_CSP_REPORT_ONLY", default=False)
SECURE_CSP = {} if ADSTUDIO_CSP_REPORT_ONLY else CONTENT_SECURITY_POLICY
SECURE_CSP_REPORT_ONLY = CONTENT_SECURITY_POLICY if ADSTUDIO_CSP_REPORT_ONLY else {}

ROOT_URLCONF = "adstudio.urls"
WSGI_APPLICATION = "adstudio.wsgi.application"
ASGI_APPLICATION = "adstudio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "adstudio" / "templates"],  # the admin's index
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",  # csp_nonce, for the admin too
            ],
        },
    },
]

DATABASES = {
    "default": database_config(
        "DATABASE_URL",
        default_sqlite_path=VAR_DIR / "db.sqlite3",
        pool_max_size=env_int("ADSTUDIO_DB_POOL_MAX_SIZE", 20, minimum=0),
        pool_timeout=env_float("ADSTUDIO_DB_POOL_TIMEOUT", 5.0, minimum=0.1),
    )
}
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

# Files the product makes (scratch tracks): under MEDIA_ROOT on this host's disk by
# default; in an S3 bucket with MEDIA_S3_BUCKET, which several hosts share (adstudio.env.
# media_storage). Served only through authorised, expiring links.
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")
# Seconds a scratch track's audio link stays valid.
ADSTUDIO_RENDER_LINK_SECONDS = env_int("ADSTUDIO_RENDER_LINK_SECONDS", 900, minimum=10)
# A render's lease: seconds without a sign of life from the task rendering it (its claim,
# renewed as it goes) before its worker is taken for dead and the sweep sends it again; and
# seconds after which a queued render whose message may have been lost is sent again. A 30 s
# ad renders in about a second.
ADSTUDIO_RENDER_STALE_AFTER = env_int("ADSTUDIO_RENDER_STALE_AFTER", 20, minimum=2)
# Whether a worker loads the mix's libraries and eSpeak NG at its start (about 0.8 s of CPU
# and 80 MB: benchmarks/worker_start.py) so that its first render does not wait for them;
# off, the first render loads them: for a worker host that seldom renders, or one that must
# start quickly.
ADSTUDIO_WORKER_LOADS_AUDIO = env_bool("ADSTUDIO_WORKER_LOADS_AUDIO", default=True)
# The loudness the `streaming` preset normalises a scratch track to, LUFS integrated (ITU-R
# BS.1770); the broadcast presets keep their standards' (audio.presets).
ADSTUDIO_RENDER_LOUDNESS_LUFS = env_float("ADSTUDIO_RENDER_LOUDNESS_LUFS", -16.0, minimum=-70.0)
if ADSTUDIO_RENDER_LOUDNESS_LUFS > -1:
    raise ImproperlyConfigured(
        f"ADSTUDIO_RENDER_LOUDNESS_LUFS={ADSTUDIO_RENDER_LOUDNESS_LUFS} is louder than full "
        "scale: a loudness target is negative, e.g. -16 (streaming) or -23 (broadcast)."
    )
# Seconds of quiet before the first words of a scratch track, and between two speakers
# where the script gives neither an overlap nor a gap (overlap 0): air a real ad leaves.
# Speech (speech/): lines read at once per render (six: a 30 s ad's lines in one wave; a
# provider plan that allows fewer concurrent requests answers 429, which is waited out), and
# the most one render may cost in speech (USD) in a workspace that sets no cap of its own
# (Workspace.speech_cost_cap_usd).
ADSTUDIO_SPEECH_CONCURRENCY = env_int("ADSTUDIO_SPEECH_CONCURRENCY", 6, minimum=1)
ADSTUDIO_SPEECH_COST_CAP_USD = env_float("ADSTUDIO_SPEECH_COST_CAP_USD", 5.0, minimum=0.0)
# Days a line or a music track read by a provider is kept for the next render (0: for
# good); past them it is read, and billed, again.
ADSTUDIO_SPEECH_CACHE_DAYS = env_int("ADSTUDIO_SPEECH_CACHE_DAYS", 90, minimum=0)
ADSTUDIO_RENDER_PREROLL_S = env_float("ADSTUDIO_RENDER_PREROLL_S", 0.3, minimum=0.0)
ADSTUDIO_RENDER_SPEAKER_GAP_S = env_float("ADSTUDIO_RENDER_SPEAKER_GAP_S", 0.25, minimum=0.0)
for _name in ("ADSTUDIO_RENDER_PREROLL_S", "ADSTUDIO_RENDER_SPEAKER_GAP_S"):
    if globals()[_name] > 5:
        raise ImproperlyConfigured(
            f"{_name}={globals()[_name]} is longer than 5 s: it is seconds of quiet in an ad "
            "of 15 to 60, e.g. 0.3."
        )

STATIC_URL = "static/"
# Where `manage.py collectstatic` puts the files that WhiteNoise serves in production.
STATIC_ROOT = Path(env_str("STATIC_ROOT") or VAR_DIR / "static")
# In production, static file names carry a hash of their content (browsers may cache them
# for ever) and come precompressed, which needs the manifest that `collectstatic` writes:
# without it every page linking a static file fails. Under DEBUG, Django's plain storage
# links the files by their own names and WhiteNoise finds them in the apps, with no
# STATIC_ROOT (the test suite does the same: tests/conftest.py).
_STATIC_FROM_APPS = DEBUG
STORAGES = {
    "default": media_storage(),
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if _STATIC_FROM_APPS
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = _STATIC_FROM_APPS
# Source maps are read only by a browser's developer tools: served as they are, not
# compressed at every collectstatic (Swagger UI's 1.9 MB map was compressed twice).
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["adstudio.parsers.SafeJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "EXCEPTION_HANDLER": "adstudio.api_errors.api_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "adstudio.pagination.PageNumbers",
    "PAGE_SIZE": 50,
}

# API tokens expire this long after they are made (30d, 12h, ...; at most a year): a
# leaked token works until then at most (accounts). Tokens already made keep their expiry.
ADSTUDIO_TOKEN_TTL = env_duration("ADSTUDIO_TOKEN_TTL", "30d", minimum_s=60, maximum_s=366 * 86400)

# Generation and chat start model runs that cost money: limited per user, exactly across
# web processes, in CACHE_URL's Redis (adstudio.throttling).
ADSTUDIO_RUN_RATE = env_rate("ADSTUDIO_RUN_RATE", "30/minute")

# Throttling counts live in the cache: with several web processes it must be shared.
CACHE_URL = redis_url("CACHE_URL")
CACHES = {
    "default": (
        # Django's Redis cache, answering from process memory while Redis is down.
        {"BACKEND": "adstudio.cache.FallbackRedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Bodies larger than this are refused with 413; a chat message longer than the message
# limit too.
ADSTUDIO_MAX_BODY_BYTES = env_int("ADSTUDIO_MAX_BODY_BYTES", 256 * 1024, minimum=1024)
ADSTUDIO_MAX_MESSAGE_CHARS = env_int("ADSTUDIO_MAX_MESSAGE_CHARS", 4000, minimum=1)
# Threads per web process for the requests that compute (all but those following a run,
# which wait in the event loop): adstudio.asgi.routing.
ADSTUDIO_WEB_THREADS = env_int("ADSTUDIO_WEB_THREADS", 32, minimum=1)
# Requests following a run whose views compute at once per web process (the others wait
# their turn in the event loop): adstudio.asgi.routing.
ADSTUDIO_WEB_STREAM_OPENINGS = env_int("ADSTUDIO_WEB_STREAM_OPENINGS", 8, minimum=1)
# Seconds a request's body may take to arrive under ASGI: past it, 408 (adstudio.asgi.bodies).
ADSTUDIO_BODY_READ_TIMEOUT = env_float("ADSTUDIO_BODY_READ_TIMEOUT", 30.0, minimum=0.1)
# Streams (event streams, long polls, ui-chat streams) one user may have open at once,
# across web processes: past it, 429 with Retry-After (adstudio.stream_slots).
ADSTUDIO_MAX_STREAMS_PER_USER = env_int("ADSTUDIO_MAX_STREAMS_PER_USER", 20, minimum=1)
# Days an invitation to a workspace stays open before it can no longer be accepted.
ADSTUDIO_INVITATION_DAYS = env_float("ADSTUDIO_INVITATION_DAYS", 7.0, minimum=0.01)
# Longest ?wait= a generate/chat/events request may ask for, in seconds.
ADSTUDIO_MAX_WAIT_SECONDS = 60

# The web client may be served from another origin: only the ones listed here.
CORS_ALLOWED_ORIGINS = env_list("CORS_ALLOWED_ORIGINS", [])
CORS_URLS_REGEX = r"^/api/.*$"
# A web client on another origin sends these besides the defaults: its retries' key, and
# an EventSource's resume point.
CORS_ALLOW_HEADERS = (*default_cors_headers, "idempotency-key", "last-event-id")
# What such a client may read of our answers besides the headers every browser shows
# (Content-Type, Content-Length, Cache-Control...): when to retry (429, 503), where a new
# run is, the request's id for a support ticket, why a token was refused, and the audio
# link's ranges, validator and file name, and the AI SDK transport's protocol header.
CORS_EXPOSE_HEADERS = [
    "Retry-After",
    "Location",
    "X-Request-ID",
    "WWW-Authenticate",
    "ETag",
    "Content-Range",
    "Accept-Ranges",
    "Content-Disposition",
    "X-Vercel-AI-UI-Message-Stream",
]

SPECTACULAR_SETTINGS = {
    "TITLE": "AdStudio API",
    "DESCRIPTION": "Audio ads made with an LLM creative director.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs describe the API, not anybody's data: public.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Swagger UI from our own static files (drf-spectacular-sidecar): the docs work
    # offline and run the version we installed, not the CDN's latest.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No validatorUrl: Swagger UI would otherwise send the schema's URL to swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "adstudio.schema.add_error_responses",
        "adstudio.schema.declare_storable_text",
        "adstudio.schema.optional_without_default",
        "adstudio.schema.json_schema_as_openapi_30",
    ],
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "conversations.models.RunStatus",
        "DraftStatusEnum": "drafts.models.DraftStatus",
        "DraftKindEnum": "drafts.models.DraftKind.values",
        "WorkspaceRoleEnum": "workspaces.roles.MemberRole",
        # The tools' own models, in the history's UIMessages (conversations.web.ui_types).
        "MusicProviderEnum": ["loudly", "mubert"],
        "SfxPlacementTypeEnum": ["start", "end", "afterVoice"],
        "ToolPartStateEnum": ["input-available", "output-available", "output-error"],
    },
}

# --- Celery -------------------------------------------------------------------------
# Without a broker, tasks run eagerly in the calling process (the embedded default).
CELERY_BROKER_URL = redis_url("CELERY_BROKER_URL") or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL.startswith("memory://")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Agent runs are long and I/O bound: acknowledge after the task ran and take one message at
# a time, so a busy worker doesn't hoard runs.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("ADSTUDIO_TASK_SOFT_TIME_LIMIT", 600, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("ADSTUDIO_TASK_TIME_LIMIT", 660, minimum=1)
if CELERY_TASK_TIME_LIMIT <= CELERY_TASK_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"ADSTUDIO_TASK_TIME_LIMIT ({CELERY_TASK_TIME_LIMIT} s) must be longer than "
        f"ADSTUDIO_TASK_SOFT_TIME_LIMIT ({CELERY_TASK_SOFT_TIME_LIMIT} s): the soft limit "
        "lets a run stop cleanly before the hard one kills it."
    )
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A lost broker connection must not cancel the runs in progress: they only need the
# database, and finish while the worker reconnects (Celery 6 turns this on by default).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Redis keeps no copy of a delivered message: the run of a worker that dies is resumed
    # by the recovery sweep from the database. With Redis's copies ("ack emulation"), a
    # broker connection lost while a run is in progress made kombu 5.7 crash the worker
    # (AttributeError restoring the copies on close; "Unrecoverable error", exit).
    "ack_emulation": False,
}

# Plain text for people, or one JSON object per line for a log collector, with the ids
# of adstudio/log_context.py (request, user, run, conversation, ad, trace) on each line.
LOG_FORMAT = env_str("LOG_FORMAT", "plain").lower()
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} is not a log format: use plain or json.")
if LOG_FORMAT == "json":
    logging.captureWarnings(True)  # Python's warnings as log lines, not as loose stderr text
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "adstudio.log_context.LogContextFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": ["asctime", "levelname", "name", "message"],
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["context"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
}

# --- Observability (docs/OBSERVABILITY.md) ----------------------------------------------
# Traces go to an OTLP/HTTP endpoint when one is set (the standard OTEL_* variables
# configure the exporter); without one nothing is instrumented.
OTEL_TRACES_ENDPOINT = otlp_endpoint(
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"
)
ADSTUDIO_TRACING = bool(OTEL_TRACES_ENDPOINT) and not env_bool("OTEL_SDK_DISABLED")
# Prompts, completions and tool arguments and results in spans: off, as they hold users'
# briefs and messages.
ADSTUDIO_TRACE_CONTENT = env_bool("ADSTUDIO_TRACE_CONTENT", default=False)
# /metrics for a scraper that sends "Authorization: Bearer <token>" (staff sessions too).
ADSTUDIO_METRICS_TOKEN = env_str("ADSTUDIO_METRICS_TOKEN")
if ADSTUDIO_METRICS_TOKEN and len(ADSTUDIO_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured(
        "ADSTUDIO_METRICS_TOKEN is shorter than 16 characters: use a long random value, "
        "e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'."
    )
# Where each process of a host keeps its metrics for the others (prometheus-client's
# multiprocess mode); it must be set before the processes start, and emptied at deploys.
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR and not Path(PROMETHEUS_MULTIPROC_DIR).is_dir():
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={PROMETHEUS_MULTIPROC_DIR!r} is not a directory: create "
        "it (empty) before starting the web and worker processes."
    )
ADSTUDIO_METRICS = env_bool(
    "ADSTUDIO_METRICS", default=bool(ADSTUDIO_METRICS_TOKEN or PROMETHEUS_MULTIPROC_DIR)
)

# --- Agent runs ------------------------------------------------------------------------
ADSTUDIO_MAX_ROUNDS = env_int("ADSTUDIO_MAX_ROUNDS", 8, minimum=1)
ADSTUDIO_MAX_TOOL_FAILURES = env_int("ADSTUDIO_MAX_TOOL_FAILURES", 3, minimum=1)
# Estimated prompt tokens of a whole request (system prompt and tools, about 850, included);
# past it the older turns are summarised, so a long conversation's calls stay bounded.
ADSTUDIO_CONTEXT_BUDGET_TOKENS = env_int("ADSTUDIO_CONTEXT_BUDGET_TOKENS", 5000, minimum=2000)
# Prompt + completion tokens one run may spend before it stops.
ADSTUDIO_RUN_TOKEN_BUDGET = env_int("ADSTUDIO_RUN_TOKEN_BUDGET", 300000, minimum=1000)
ADSTUDIO_HEARTBEAT_INTERVAL = env_float("ADSTUDIO_HEARTBEAT_INTERVAL", 5.0, minimum=0.1)
# Runs of one worker process that compute at once, first come first served (0: no limit);
# a run waiting on its provider holds none. See conversations/runs/step_gate.py.
ADSTUDIO_STEP_SLOTS = env_int("ADSTUDIO_STEP_SLOTS", 2, minimum=0)
# A running run whose heartbeat is older than this is taken for dead and resumed: a worker
# paused or out of touch for less keeps its runs; a dead one's are resumed within this and
# a sweep interval (35 s).
ADSTUDIO_RUN_STALE_AFTER = env_float("ADSTUDIO_RUN_STALE_AFTER", 25.0, minimum=1.0)
# Times a run is taken over from a worker that stopped (killed, out of memory, out of touch
# past the stale limit) before it ends failed with resume_limit; 0: never resumed.
ADSTUDIO_RUN_MAX_RESUMES = env_int("ADSTUDIO_RUN_MAX_RESUMES", 3, minimum=0)
# A queued run older than this whose task may have been lost is enqueued again.
ADSTUDIO_QUEUED_RUN_GRACE = env_float("ADSTUDIO_QUEUED_RUN_GRACE", 60.0, minimum=1.0)
# Seconds between recovery sweeps (runs and renders) in each worker process, one process at
# a time across the hosts (adstudio.sweeps): a cheap indexed query each.
ADSTUDIO_RECOVERY_INTERVAL = env_float("ADSTUDIO_RECOVERY_INTERVAL", 10.0, minimum=1.0)
# Whether this worker process takes its turn at those sweeps. Off only for a worker that
# shares the database with workers it must not recover for (another deployment's broker):
# a sweep sends what it recovers to its own broker.
ADSTUDIO_SWEEPS = env_bool("ADSTUDIO_SWEEPS", default=True)
if ADSTUDIO_HEARTBEAT_INTERVAL >= ADSTUDIO_RUN_STALE_AFTER:
    raise ImproperlyConfigured(
        f"ADSTUDIO_HEARTBEAT_INTERVAL ({ADSTUDIO_HEARTBEAT_INTERVAL:g} s) must be shorter than "
        f"ADSTUDIO_RUN_STALE_AFTER ({ADSTUDIO_RUN_STALE_AFTER:g} s), or live runs look dead."
    )
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
    # Anthropic bills cache reads at 0.1x and 5-minute cache writes at 1.25x the input price.
    "claude-sonnet-4-6": {
        "input": 3.00,
        "cached_input": 0.30,
        "cache_write": 3.75,
        "output": 15.00,
    },
    "claude-sonnet-4-5": {
        "input": 3.00,
        "cached_input": 0.30,
        "cache_write": 3.75,
        "output": 15.00,
    },
    "claude-haiku-4-5": {"input": 1.00, "cached_input": 0.10, "cache_write": 1.25, "output": 5.00},
    "claude-opus-4-5": {"input": 5.00, "cached_input": 0.50, "cache_write": 6.25, "output": 25.00},
}
# --- Providers ------------------------------------------------------------------------
# Keys, base URLs, models, routes, fallbacks and strict tools (docs/providers.md):
# ADSTUDIO_PROVIDERS, ADSTUDIO_PROVIDER_ROUTES and ADSTUDIO_PROVIDER_FALLBACKS are read by
# the providers app at start-up (providers/configuration.py, from ProvidersConfig.ready),
# which knows the providers' names and variables; a bad value stops the start with a
# message naming it, as every variable here does. Set here, they would be taken as they are.
ADSTUDIO_PROVIDER_RETRY = {
    "max_attempts": env_int("ADSTUDIO_PROVIDER_MAX_ATTEMPTS", 3, minimum=1),
    "max_total_seconds": env_float("ADSTUDIO_PROVIDER_RETRY_BUDGET", 60.0, minimum=0.0),
    "base_delay": env_float("ADSTUDIO_PROVIDER_BACKOFF_BASE", 0.5, minimum=0.0),
    "max_delay": env_float("ADSTUDIO_PROVIDER_BACKOFF_MAX", 20.0, minimum=0.0),
}
# Seconds without a byte from the provider before an attempt fails (and is retried).
ADSTUDIO_PROVIDER_TIMEOUT = env_float("ADSTUDIO_PROVIDER_TIMEOUT", 60.0, minimum=0.1)
ADSTUDIO_PROVIDER_CONNECT_TIMEOUT = env_float(
    "ADSTUDIO_PROVIDER_CONNECT_TIMEOUT", 10.0, minimum=0.1
)
