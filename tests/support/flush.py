"""A transactional test's database emptied in milliseconds instead of Django's ~170 ms.

Django's flush (``TransactionTestCase`` teardown) TRUNCATEs every table, for which
PostgreSQL makes new files for each table and index (~130 ms for ours), then sends
``post_migrate`` to make the content types, permissions and permission groups again (~40
ms, 54 queries). Over the suite's several hundred transactional tests that was about a
third of the fast tests' time.

Here one round trip DELETEs every table's rows with the triggers off
(``session_replication_role = replica``: foreign keys, the rule that a workspace keeps an
admin and the NOTIFY triggers are all triggers, and TRUNCATE fires none of their row
triggers either), the counts table the catalogue's triggers keep included. The rows
``post_migrate`` makes are kept when they are exactly as it left them (one fingerprint
query); a test that changed them gets them deleted and made again as Django does. Where
this cannot run (not PostgreSQL, a user who may not turn triggers off, a test with
``available_apps`` or ``serialized_rollback``) Django's own flush runs.
"""

from __future__ import annotations

from django.core.management.sql import emit_post_migrate_signal
from django.db import connections, transaction
from django.test import TransactionTestCase

# The tables post_migrate fills: content types, permissions and the groups drafts and
# voices keep (adstudio.permission_groups).
MADE_BY_POST_MIGRATE = (
    "django_content_type",
    "auth_permission",
    "auth_group",
    "auth_group_permissions",
)
_KEPT = ", ".join(f"'{table}'" for table in (*MADE_BY_POST_MIGRATE, "django_migrations"))

_DELETE_ALL_BUT_THOSE = f"""
DO $flush$
DECLARE name text;
BEGIN
    SET LOCAL session_replication_role = replica;
    FOR name IN
        SELECT quote_ident(tablename) FROM pg_tables
        WHERE schemaname = current_schema()
          AND tablename NOT IN ({_KEPT})
    LOOP
        EXECUTE 'DELETE FROM ' || name;
    END LOOP;
END
$flush$
"""

_FINGERPRINT = " || ".join(
    f"(SELECT md5(coalesce(string_agg(row_text, ',' ORDER BY row_text), '')) "
    f"FROM (SELECT t::text AS row_text FROM {table} t) rows)"
    for table in MADE_BY_POST_MIGRATE
)

# Fingerprint of the post_migrate rows as last made, per database name.
_made: dict[str, str] = {}
_eligible: dict[str, bool] = {}


def _can_turn_triggers_off(connection) -> bool:
    name = connection.settings_dict["NAME"]
    if name not in _eligible:
        eligible = connection.vendor == "postgresql"
        if eligible:
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('is_superuser') = 'on'")
                eligible = cursor.fetchone()[0]
        _eligible[name] = eligible
    return _eligible[name]


def _fingerprint(cursor) -> str:
    cursor.execute(f"SELECT {_FINGERPRINT}")
    return cursor.fetchone()[0]


def flush(alias: str) -> None:
    """Empty database ``alias`` as Django's flush does, keeping the post_migrate rows
    when they are unchanged."""
    connection = connections[alias]
    name = connection.settings_dict["NAME"]
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        cursor.execute(_DELETE_ALL_BUT_THOSE)
        if _made.get(name) == _fingerprint(cursor):
            return
        cursor.execute("SET LOCAL session_replication_role = replica")
        for table in MADE_BY_POST_MIGRATE:
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")
    emit_post_migrate_signal(verbosity=0, interactive=False, db=alias)
    with connection.cursor() as cursor:
        _made[name] = _fingerprint(cursor)


_django_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown(self: TransactionTestCase) -> None:
    aliases = self._databases_names(include_mirrors=False)
    if (
        self.available_apps is not None
        or self.serialized_rollback
        or not all(_can_turn_triggers_off(connections[alias]) for alias in aliases)
    ):
        return _django_teardown(self)
    for alias in aliases:
        flush(alias)


def install(test_connections) -> None:
    """Make every transactional test's teardown use ``flush``, the post_migrate rows kept
    as they are now in ``test_connections``' databases, just made by migrate."""
    for connection in test_connections:
        if _can_turn_triggers_off(connection):
            with connection.cursor() as cursor:
                _made[connection.settings_dict["NAME"]] = _fingerprint(cursor)
    TransactionTestCase._fixture_teardown = _fixture_teardown
