"""The migrated template the test databases are copied from (tests/support/template_database.py):
a new one for any change to the product's code, and the ones no run has used for a day
dropped, a recently used one kept."""

from __future__ import annotations

import time
import uuid

import pytest
from django.db import connection
from psycopg import sql

from tests.support import template_database


def test_a_change_to_any_product_module_names_a_new_template(tmp_path, monkeypatch):
    for package in template_database.PRODUCT:
        (tmp_path / package / "migrations").mkdir(parents=True)
        (tmp_path / package / "models.py").write_text("# models\n")
    monkeypatch.setattr(template_database, "ROOT", tmp_path)
    before = template_database.fingerprint()
    assert template_database.fingerprint() == before  # the same code, the same template

    migration = tmp_path / "drafts" / "migrations" / "0099_new.py"
    migration.write_text("# a new migration\n")
    with_migration = template_database.fingerprint()
    (tmp_path / "voices" / "models.py").write_text("# models, a field added\n")

    assert len({before, with_migration, template_database.fingerprint()}) == 3


@pytest.mark.django_db
def test_templates_unused_for_a_day_are_dropped_and_recent_ones_kept():
    run = uuid.uuid4().hex[:8]
    stale, recent = (f"{template_database.PREFIX}{run}_{age}" for age in ("stale", "recent"))
    last_use = {stale: time.time() - template_database.UNUSED_FOR_S - 60, recent: time.time()}
    server = template_database.maintenance_connection(connection)
    with server, template_database.locked(server):
        try:
            for name, used in last_use.items():
                server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                server.execute(
                    sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                        sql.Identifier(name), sql.Literal(str(int(used)))
                    )
                )

            template_database.drop_unused(server, keep=connection.settings_dict["NAME"])

            left = {
                name
                for (name,) in server.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE %s",
                    [f"{template_database.PREFIX}{run}_%"],
                )
            }
        finally:
            for name in last_use:
                server.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))

    assert left == {recent}
