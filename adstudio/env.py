"""Reading settings from the environment, with errors that name the variable at fault.

Settings fail at start-up with ``ImproperlyConfigured`` and a message saying what to fix,
rather than later with a stack trace from inside a database or broker driver.
"""

from __future__ import annotations

import math
import os
import re
import select
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

_DATABASE_SCHEMES = {"postgres", "postgresql", "pgsql", "sqlite"}
_BROKER_SCHEMES = {"redis", "rediss"}
_PERIODS = {"s", "m", "h", "d"}  # DRF reads a rate's period by its first letter


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use 1/0, true/false or yes/no.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number.")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate such as ``30/minute``: checked here, as DRF would otherwise fail
    on every throttled request."""
    rate = env_str(name, default)
    count, _, period = rate.partition("/")
    if not (count.strip().isdigit() and int(count) > 0 and period.strip()[:1] in _PERIODS):
        raise ImproperlyConfigured(
            f"{name}={rate!r} is not a rate: expected REQUESTS/PERIOD, such as 30/minute "
            "(the period: second, minute, hour or day)."
        )
    return rate


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def env_duration(name: str, default: str, *, minimum_s: int, maximum_s: int) -> int:
    """A duration in seconds, written as a whole number with a unit (``30d``, ``12h``,
    ``90m``, ``3600s``) or as plain seconds, between ``minimum_s`` and ``maximum_s``."""
    raw = env_str(name, default)
    match = re.fullmatch(r"(\d+)\s*([smhd]?)", raw.lower())
    if not match:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a duration: expected a whole number with a unit, such as "
            "30d, 12h, 90m or 3600s (plain numbers are seconds)."
        )
    seconds = int(match[1]) * _DURATION_UNITS[match[2] or "s"]
    if not minimum_s <= seconds <= maximum_s:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is {seconds} s: it must be between {minimum_s} s and {maximum_s} s."
        )
    return seconds


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_LOCKOUT_PARAMETERS = ("username", "ip_address", "user_agent")


def env_lockout_parameters(name: str, default: str) -> list[str | list[str]]:
    """django-axes' ``AXES_LOCKOUT_PARAMETERS`` from ``username,ip_address``: a login is
    refused once any one item has failed too often; an item joins parameters with ``+``
    (``username+ip_address``: that user from that address)."""
    raw = env_str(name, default)
    items: list[str | list[str]] = []
    for item in (part.strip() for part in raw.split(",")):
        parameters = [parameter.strip() for parameter in item.split("+")]
        unknown = [parameter for parameter in parameters if parameter not in _LOCKOUT_PARAMETERS]
        if not item or unknown or len(set(parameters)) != len(parameters):
            raise ImproperlyConfigured(
                f"{name}={raw!r} is not a list of lockout parameters: expected items such as "
                "username,ip_address (either one failing too often locks out) or "
                "username+ip_address (that user from that address), made of "
                f"{', '.join(_LOCKOUT_PARAMETERS)}."
            )
        items.append(parameters[0] if len(parameters) == 1 else parameters)
    return items


def env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto=https``: the header a TLS-terminating proxy sets and its value on
    HTTPS requests, as Django reads it (``HTTP_X_FORWARDED_PROTO``). Unset: none trusted."""
    raw = env_str(name)
    if not raw:
        return None
    header, sep, value = (part.strip() for part in raw.partition("="))
    if not (sep and value and header.replace("-", "").isalnum() and header.isascii()):
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not HEADER=VALUE: expected the name of the header the proxy "
            "sets (letters, digits, hyphens) and its value on HTTPS requests, such as "
            "X-Forwarded-Proto=https."
        )
    return f"HTTP_{header.upper().replace('-', '_')}", value


def _redacted(url: str) -> str:
    """The URL with any password replaced, so an error message never leaks a secret."""
    try:
        parts = urlsplit(url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return parts._replace(netloc=netloc).geturl()
    except ValueError:
        pass
    return url if "@" not in url else "<url with credentials>"


def database_config(
    name: str, *, default_sqlite_path: Path, pool_max_size: int = 0, pool_timeout: float = 5.0
) -> dict:
    """``DATABASES['default']`` from a URL in ``name``; an embedded SQLite file when unset.

    For Postgres with ``pool_max_size`` > 0, connections come from a psycopg pool: threads
    (web requests, agent runs) borrow one per unit of work instead of each holding one.
    """
    url = env_str(name)
    if not url:
        default_sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(default_sqlite_path),
            # Several threads (runserver, eager tasks) share the file: wait, don't fail.
            "OPTIONS": {"timeout": 20},
        }
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in _DATABASE_SCHEMES:
        raise ImproperlyConfigured(
            f"{name}={_redacted(url)!r} is not a database URL this project supports: expected "
            "postgres://USER[:PASSWORD]@HOST[:PORT]/NAME (or sqlite:///PATH)."
        )
    pooled = scheme != "sqlite" and pool_max_size > 0
    try:
        config = dj_database_url.parse(
            url, conn_max_age=0 if pooled else 60, conn_health_checks=not pooled
        )
    except (ValueError, dj_database_url.ParseError) as exc:
        raise ImproperlyConfigured(
            f"{name}={_redacted(url)!r} is malformed ({exc}); expected "
            "postgres://USER[:PASSWORD]@HOST[:PORT]/NAME."
        ) from None
    if not config.get("NAME"):
        raise ImproperlyConfigured(
            f"{name}={_redacted(url)!r} names no database: add it after the host, "
            "e.g. postgres://postgres@127.0.0.1:5432/adstudio."
        )
    if scheme != "sqlite" and not config.get("HOST"):
        raise ImproperlyConfigured(f"{name}={_redacted(url)!r} names no host.")
    if scheme != "sqlite":
        config.setdefault("OPTIONS", {}).update(
            # Parameters bound by the server, so a statement run again (every step of an
            # agent run is the same few) is prepared once per connection and not parsed
            # and planned each time. Not for
            # a transaction-pooling PgBouncer in front of the database, which would lose
            # the prepared statements between transactions.
            server_side_binding=True,
            prepare_threshold=5,  # psycopg's default: statements seen 5 times
        )
        _keepalives(config["OPTIONS"])
    if pooled:
        reconnect_promptly()
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": pool_max_size,
            # How long a request waits for a connection: past it, while the database is
            # down, it answers 503 (adstudio.db.outage) rather than hold its thread.
            "timeout": pool_timeout,
            # A pooled connection is checked before use, so a database restart costs one
            # failed check, not a failed request.
            "check": pool_check,
        }
    return config


# TCP keepalives of every PostgreSQL connection, on both ends: a host that dies (power,
# network) without closing its connections has its backends dropped by the server within
# about a minute (idle 30 s, then 3 probes 10 s apart), instead of holding its share of
# max_connections, and the locks of any transaction it had open, for hours (the kernel's
# default: 2 h idle); and a process notices a database host that vanished as soon.
# Keepalives probe only a connection with nothing unacknowledged: a host cut off while the
# other end's data to it was in flight would be retransmitted to for about 15 minutes, so
# ``tcp_user_timeout`` (ms) ends a connection whose data stays unacknowledged for 30 s.
# Each can be overridden in DATABASE_URL's query (?keepalives_idle=60, or
# ?options=-c tcp_keepalives_idle=60 for the server's side).
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 30000,
}
# The server's name of each (its settings, asked for in the connection's ``options``).
_SERVER_NAMES = {
    "keepalives_idle": "tcp_keepalives_idle",
    "keepalives_interval": "tcp_keepalives_interval",
    "keepalives_count": "tcp_keepalives_count",
    "tcp_user_timeout": "tcp_user_timeout",
}


def _keepalives(options: dict) -> None:
    for name, value in KEEPALIVES.items():
        options.setdefault(name, value)
    server = [
        f"-c {server_name}={options[name]}"
        for name, server_name in _SERVER_NAMES.items()
        if f"{server_name}=" not in options.get("options", "")
    ]
    if server:
        options["options"] = " ".join([options.get("options", ""), *server]).strip()


# Seconds between a pool's attempts to reconnect while the database is down.
RECONNECT_EVERY_S = 0.5


def reconnect_promptly() -> None:
    """The pools try to reconnect every ``RECONNECT_EVERY_S`` while the database is down.

    psycopg_pool doubles its wait after each failed attempt (1, 2, 4 ... s, up to its
    ``reconnect_timeout``): after a 90 s outage its next attempt came up to 37 s after the
    database was back, and requests and the recovery sweep failed until then. It has no
    option for this; its attempts read the delays from these class attributes. A
    connection attempt to a server that is down costs a refused TCP connect, so trying
    twice a second costs nothing worth saving."""
    from psycopg_pool.base import AttemptWithBackoff

    AttemptWithBackoff.INITIAL_DELAY = RECONNECT_EVERY_S
    AttemptWithBackoff.DELAY_JITTER = 0.2
    AttemptWithBackoff.DELAY_BACKOFF = 1.0


def pool_check(conn) -> None:
    """Check a pooled connection before it is used; raise if it is dead.

    A connection the server has closed (a restart, a terminated backend) has something
    to read: the server's last message, or the end of the stream. Only then does the
    check cost a round trip, which fails and has the pool replace the connection. A
    healthy idle connection has nothing to read, and a thread that hands its connection
    back before every model call (the agent loop) takes it again without waiting."""
    from psycopg_pool import ConnectionPool

    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        pending = bool(poller.poll(0))
    except Exception:  # closed, or no socket to poll: let the full check say what is wrong
        pending = True
    if not pending:
        return
    try:
        ConnectionPool.check_connection(conn)
    except Exception:
        # One dead connection after a database restart means every idle one is: have the
        # pool drop them all now. Left to this check, the pool would find them one
        # request at a time and back off 1, 2, 4, 8, 16 s between them, so requests
        # time out (30 s) long after the database is back.
        pool = getattr(conn, "_pool", None)  # set by the pool, as Django's backend reads it
        if pool is not None:
            pool.check()
        raise


def otlp_endpoint(*names: str) -> str:
    """The first of the variables ``names`` that is set, checked to be an http(s) URL (an
    OTLP/HTTP collector), or "" when none is."""
    for name in names:
        url = env_str(name)
        if not url:
            continue
        if not _is_http_url(url):
            raise ImproperlyConfigured(
                f"{name}={_redacted(url)!r} is not an OTLP/HTTP endpoint: expected "
                "http(s)://HOST:PORT, e.g. http://127.0.0.1:4318."
            )
        return url
    return ""


def _is_http_url(url: str) -> bool:
    """Whether ``url`` is http(s)://HOST[:PORT]... with a port that is a number."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def redis_url(name: str) -> str:
    """A validated Redis URL from ``name``, or "" when unset."""
    url = env_str(name)
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:  # its message may quote the password: it is not repeated here
        raise ImproperlyConfigured(
            f"{name}={_redacted(url)!r} is malformed (its port is not a number); "
            "expected redis://HOST:PORT/DB."
        ) from None
    if parts.scheme not in _BROKER_SCHEMES or not parts.hostname:
        raise ImproperlyConfigured(
            f"{name}={_redacted(url)!r} is not a Redis URL: expected redis://HOST:PORT/DB."
        )
    return url


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z0-9-]{1,32}$")


def media_storage() -> dict:
    """``STORAGES["default"]``, where the product's files live: an S3 bucket when
    ``MEDIA_S3_BUCKET`` is set (``MEDIA_S3_ENDPOINT_URL`` for an S3-compatible server,
    ``MEDIA_S3_REGION``, ``MEDIA_S3_PREFIX``), else ``MEDIA_ROOT`` on this host's disk.
    The bucket's credentials are boto3's to find (``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY``, a profile, an instance role): never in the settings."""
    bucket = env_str("MEDIA_S3_BUCKET")
    if not bucket:
        for name in ("MEDIA_S3_ENDPOINT_URL", "MEDIA_S3_REGION", "MEDIA_S3_PREFIX"):
            if env_str(name):
                raise ImproperlyConfigured(
                    f"{name} is set but MEDIA_S3_BUCKET is not: set the bucket to store "
                    "files in S3, or unset it to keep them under MEDIA_ROOT."
                )
        # Its location is MEDIA_ROOT, read when first used (so a test may change it).
        return {"BACKEND": "adstudio.file_storage.WholeFileSystemStorage"}
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise ImproperlyConfigured(
            f"MEDIA_S3_BUCKET={bucket!r} is not a bucket name: 3 to 63 lower-case letters, "
            "digits, dots and hyphens, starting and ending with a letter or digit."
        )
    options: dict = {"bucket_name": bucket, "file_overwrite": True}
    endpoint = env_str("MEDIA_S3_ENDPOINT_URL")
    if endpoint:
        if not _is_http_url(endpoint):
            raise ImproperlyConfigured(
                f"MEDIA_S3_ENDPOINT_URL={_redacted(endpoint)!r} is not an S3 endpoint: "
                "expected http(s)://HOST[:PORT], e.g. https://minio.internal:9000."
            )
        options["endpoint_url"] = endpoint
    region = env_str("MEDIA_S3_REGION")
    if region:
        if not _REGION.match(region):
            raise ImproperlyConfigured(
                f"MEDIA_S3_REGION={region!r} is not a region name, e.g. eu-west-1."
            )
        options["region_name"] = region
    prefix = env_str("MEDIA_S3_PREFIX").strip("/")
    if prefix:
        if not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", prefix) or ".." in prefix.split("/"):
            raise ImproperlyConfigured(
                f"MEDIA_S3_PREFIX={prefix!r} is not a key prefix: letters, digits, '.', '_', "
                "'-' and '/' (no '..'), e.g. adstudio/media."
            )
        options["location"] = prefix
    return {"BACKEND": "adstudio.s3_storage.MediaS3Storage", "OPTIONS": options}
