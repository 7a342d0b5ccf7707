"""Suite-wide fixtures and guards.

The suite runs on the real Postgres (``DATABASE_URL``); it refuses to fall back to SQLite,
because constraints, locks and races behave differently there. No test may reach a host
outside loopback: a provider call that escapes the local test servers fails loudly.
"""

from __future__ import annotations

import ipaddress
import os
import pty
import socket
import subprocess
from collections import Counter

import pytest
from django.conf import settings

pytest_plugins = [
    "tests.fakes.fixtures",  # fake_openai, fake_providers, fake_anthropic, fake_elevenlabs
    "tests.support.fixtures",  # broker, worker
    "tests.support.observability",  # tracing_on, collector, metrics_on
    "tests.support.rewrite_cache",  # the test modules rewritten once, before the processes
]
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}

# Fixtures that start a process or share one: a test that asks for one is ``slow``.
PROCESS_FIXTURES = {
    "worker",
    "private_redis",
    "private_postgres",
    "shared_stack",
    "web_stack",
    "server",
    "node",
}
# Tests that share what is built once per session run in one test process (pytest-xdist's
# ``--dist loadgroup``), so that only one process builds it: the shared gunicorn and
# worker; the migrated cluster that private PostgreSQL servers copy (its tests crash and
# restart servers, and never in the same minute as each other).
SHARED_PROCESS_FIXTURES = {"shared_stack": "shared-stack", "migrated_cluster": "private-postgres"}


def pytest_configure(config: pytest.Config) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if not engine.endswith("postgresql"):
        raise pytest.UsageError(
            "The test suite needs PostgreSQL: set DATABASE_URL=postgres://... "
            f"(got engine {engine!r}). Run it with `make test`."
        )
    # Test users' passwords need no real hashing: PBKDF2 costs about a second per user here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Pages render their static links without a collectstatic run (8 s): files by their
    # own names, found in the apps, as under DEBUG. The browser tests run gunicorn on the
    # production storage after collectstatic.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    settings.WHITENOISE_USE_FINDERS = settings.WHITENOISE_AUTOREFRESH = True


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Marks tests before the other plugins' hooks run (``-m`` deselects by these marks),
    and orders them after (pytest-django's orders them by database use). The longest work
    starts first, beside the rest, rather than last, when the suite would wait for it
    alone: the tests of several minutes, then the groups of one process each, then the
    tests that start processes, then the quick ones (pytest-xdist hands work out in this
    order: ``--no-loadscope-reorder``). Each test owns its data, whatever ran before it in
    its process: transactional tests need not run after the others."""
    duplicated = [nodeid for nodeid, n in Counter(i.nodeid for i in items).items() if n > 1]
    if duplicated:
        # pytest-xdist schedules by node id: all but one of the duplicates would not run.
        raise pytest.UsageError(f"tests share a node id: {', '.join(sorted(duplicated))}")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & PROCESS_FIXTURES:
            item.add_marker(pytest.mark.slow)
        for fixture, group in SHARED_PROCESS_FIXTURES.items():
            if fixture in fixtures and not item.get_closest_marker("xdist_group"):
                item.add_marker(pytest.mark.xdist_group(group))
    yield
    items.sort(
        key=lambda item: (
            not item.get_closest_marker("first"),
            not item.get_closest_marker("xdist_group"),
            not item.get_closest_marker("slow"),
        )
    )


@pytest.fixture(autouse=True)
def _processes_only_in_slow_tests(request, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that starts a process must be marked ``slow`` (or use a fixture that is),
    so that ``make test-fast`` is what README says it is: no test there starts one."""
    if request.node.get_closest_marker("slow"):
        return

    def refused(*args, **kwargs):
        raise RuntimeError(
            f"{request.node.nodeid} starts a process: mark it @pytest.mark.slow "
            "(make test-fast leaves those out)"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refused)
    monkeypatch.setattr(os, "fork", refused)
    monkeypatch.setattr(os, "forkpty", refused)
    monkeypatch.setattr(pty, "fork", refused)


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like never leave the machine
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, django_db_blocker):
    """Each test process's database is a copy of a migrated template that runs of the same
    code share (``tests.support.template_database``), not migrated anew."""
    from tests.support import template_database

    with django_db_blocker.unblock():
        template_database.use_template()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test databases commit without waiting for the disk (``synchronous_commit`` off
    for them alone, not for the server): a test's data dies with its database, and about a
    millisecond a commit adds up over the suite's commits. What is proven durable is proven
    on private servers (tests/reliability), and that the product never turns the wait off
    itself, in tests/adstudio/db/test_batch.py. The shared gunicorn and worker connect
    after this, so they commit the same way. A transactional test's teardown empties the
    database by ``tests.support.flush``, not Django's TRUNCATE."""
    from django.db import connections
    from django.db.backends.base.creation import TEST_DATABASE_PREFIX

    from tests.support import flush

    with django_db_blocker.unblock():
        made = [
            connection
            for connection in connections.all()
            # the databases made for this session (none where no test of it needs one)
            if connection.settings_dict["NAME"].startswith(TEST_DATABASE_PREFIX)
        ]
        for connection in made:
            with connection.cursor() as cursor:
                name = connection.ops.quote_name(connection.settings_dict["NAME"])
                cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit TO off")
            connection.close()  # its next session takes the setting
        flush.install(made)
    yield


@pytest.fixture(scope="session", autouse=True)
def _run_wakeups_stopped_before_teardown(django_db_setup, django_db_blocker):
    """The run wake-ups' and the run cancels' listeners hold connections to the test
    database, which must be closed before that database is dropped (each is woken by a
    notification sent through the database)."""
    from conversations.events.wakeups import run_wakeups
    from conversations.runs import heartbeat

    yield
    with django_db_blocker.unblock():
        run_wakeups.stop()
        heartbeat.stop_listening()


@pytest.fixture(autouse=True)
def _no_network_beyond_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any connection to a non-loopback address (no real LLM call, ever); a Unix
    socket never leaves the machine."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def guarded_connect(sock: socket.socket, address, *args, **kwargs):
        host = address[0] if isinstance(address, tuple) else address
        if sock.family != socket.AF_UNIX and not _is_loopback(host):
            raise ConnectionRefusedError(f"test tried to reach {host!r}: only loopback allowed")
        return real_connect(sock, address, *args, **kwargs)

    def guarded_getaddrinfo(host, *args, **kwargs):
        if host is not None and not _is_loopback(host):
            raise socket.gaierror(f"test tried to resolve {host!r}: only loopback allowed")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)


@pytest.fixture(autouse=True)
def _run_rate_limits_of_this_test():
    """The run limit's windows kept in memory (no CACHE_URL) start empty for each test."""
    from adstudio.throttling import limiter

    limiter.cache_clear()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_superuser(
        username="staff", password="pw-staff-123", email="staff@example.com"
    )


@pytest.fixture
def make_ad(user):
    from drafts.models import Ad

    def make(**overrides) -> Ad:
        from workspaces.services import workspace_personal

        fields = {
            "owner": user,
            "title": "Spotify Premium family plan",
            "client": "Spotify Premium family plan",
            "audience": "Thai families",
            "duration_s": 30,
            "market": "TH",
            "language": "th",
        }
        fields.update(overrides)
        fields.setdefault("workspace", workspace_personal(user=fields["owner"]))
        return Ad.objects.create(**fields)

    return make


@pytest.fixture
def ad(make_ad):
    return make_ad()


@pytest.fixture
def make_voice():
    from voices.models import Voice

    counter = iter(range(1, 10_000))

    def make(**overrides) -> Voice:
        n = next(counter)
        fields = {
            "provider": "sample",
            "provider_voice_id": f"voice-{n}",
            "name": f"Voice {n}",
            "language": "th",
            "gender": "female",
            "style": "warm",
            "approved": True,
            "active": True,
        }
        fields.update(overrides)
        return Voice.objects.create(**fields)

    return make
