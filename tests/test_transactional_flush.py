"""The suite's fast teardown of transactional tests empties what Django's flush empties."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from drafts.reviewers import REVIEWERS
from tests.support import flush

pytestmark = pytest.mark.django_db(transaction=True)


def rows_per_table() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        tables = [row[0] for row in cursor.fetchall()]
        counts = {}
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def test_every_table_is_emptied_but_the_rows_migrate_makes(make_ad, make_voice):
    make_ad()  # a user, a workspace, its admin membership, an ad
    make_voice()  # and the catalogue's facet counts, kept by triggers
    before = rows_per_table()
    assert before["voices_facet_count"] > 0 and before["workspaces_membership"] > 0
    reviewers = set(Group.objects.get(name=REVIEWERS).permissions.values_list("pk", flat=True))

    flush.flush("default")

    after = rows_per_table()
    kept = {*flush.MADE_BY_POST_MIGRATE, "django_migrations"}
    assert {table for table, rows in after.items() if rows} == kept
    assert {table: after[table] for table in kept} == {table: before[table] for table in kept}
    assert set(Group.objects.get(name=REVIEWERS).permissions.values_list("pk", flat=True)) == (
        reviewers
    )


def test_rows_migrate_makes_are_made_again_when_a_test_changed_them():
    flush.flush("default")  # the fingerprint of the rows as migrate makes them
    Group.objects.get(name=REVIEWERS).permissions.clear()
    ContentType.objects.filter(app_label="drafts").delete()  # and their permissions

    flush.flush("default")

    permissions = Group.objects.get(name=REVIEWERS).permissions
    assert permissions.filter(codename="activate_draft").exists()
    assert Permission.objects.filter(content_type__app_label="drafts").count() >= 4
