"""The test databases copied from one migrated template rather than each migrated anew.

Migrating a test database costs a test process 3-5 s of CPU; copying a migrated one
(``CREATE DATABASE ... TEMPLATE``) a fraction of a second. The template is named by a
fingerprint of everything that decides what migrating makes (the product's code, the
installed packages), so a change to any of it makes a new one, and it stays on the
server between runs: a run of unchanged code migrates nothing, and the processes of a run
that changed it migrate once between them, not once each. The first process to need it
builds it while the others wait on a PostgreSQL advisory lock. Templates no run has used
for a day are dropped (the last use is the database's comment), so edits do not pile
them up.

Django copies the template itself (its ``TEST["TEMPLATE"]`` setting) and still runs
``migrate``, which finds every migration applied and only sends ``post_migrate``.
"""

from __future__ import annotations

import contextlib
import hashlib
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connections
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
# What a migrated database is made of: the apps' migrations and models, the post_migrate
# handlers, the settings that install them (every product module, to be safe).
PRODUCT = (
    "accounts", "adstudio", "audio", "conversations", "drafts", "evaluations",
    "providers", "renders", "speech", "voices", "workspaces",
)  # fmt: skip
PREFIX = "adstudio_test_template_"
UNUSED_FOR_S = 24 * 3600
_LOCK = "adstudio-test-template"


def fingerprint() -> str:
    """Of the product's modules and the installed packages (Django's and the other apps'
    migrations come with them)."""
    packages = Path(sysconfig.get_paths()["purelib"])
    installed = sorted(path.name for path in packages.glob("*.dist-info"))  # name-version
    digest = hashlib.sha256("\n".join(installed).encode())
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def use_template(alias: str = "default") -> str:
    """Make sure the template for this code exists on ``alias``'s server, building it if
    needed, and have Django create the test database from it; returns its name."""
    connection = connections[alias]
    name = PREFIX + fingerprint()
    with maintenance_connection(connection) as server, locked(server):
        exists = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if not exists.fetchone():
            _build(connection, server, name)
        server.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(name), sql.Literal(str(int(time.time())))
            )
        )
        drop_unused(server, keep=name)
    connection.settings_dict.setdefault("TEST", {})["TEMPLATE"] = name
    return name


@contextlib.contextmanager
def locked(server: psycopg.Connection) -> Iterator[None]:
    """Held while templates are looked for, built, marked as used or dropped, so that no
    process drops one that another has just chosen to copy."""
    server.execute("SELECT pg_advisory_lock(hashtext(%s))", [_LOCK])
    try:
        yield
    finally:
        server.execute("SELECT pg_advisory_unlock(hashtext(%s))", [_LOCK])


def maintenance_connection(connection) -> psycopg.Connection:
    """A connection to the server's maintenance database, outside any transaction."""
    params = connection.get_connection_params()
    params = {k: v for k, v in params.items() if k in ("host", "port", "user", "password")}
    return psycopg.connect(dbname="postgres", autocommit=True, **params)


def _build(connection, server: psycopg.Connection, name: str) -> None:
    """Migrate a database under a temporary name, then give it the template's name: a
    process killed half-way leaves no template that looks whole."""
    building = f"{name}_building"
    server.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(building)))
    test_settings = connection.settings_dict.setdefault("TEST", {})
    own = test_settings.get("NAME"), connection.settings_dict["NAME"]
    test_settings["NAME"] = building
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True)
    finally:
        connection.close()
        connection.close_pool()  # no connection of its pool left on the database renamed
        test_settings["NAME"], connection.settings_dict["NAME"] = own
        settings.DATABASES[connection.alias]["NAME"] = own[1]
    server.execute(
        sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(building), sql.Identifier(name)
        )
    )


def drop_unused(server: psycopg.Connection, *, keep: str) -> None:
    """Drop the templates no run has used for a day (one in use stays; it is tried again
    next time). Called under ``locked``."""
    rows = server.execute(
        "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database "
        "WHERE datname LIKE %s AND datname <> %s",
        [PREFIX + "%", keep],
    ).fetchall()
    for datname, last_used in rows:
        if last_used and last_used.isdigit() and time.time() - int(last_used) < UNUSED_FOR_S:
            continue
        with contextlib.suppress(psycopg.Error):
            server.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(datname)))
