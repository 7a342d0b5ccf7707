"""A workspace keeps at least one admin, checked by PostgreSQL at commit: a membership
change or removal that leaves a workspace with members but no admin is refused, however
it is made (the API, the admin, a user's deletion, SQL). A workspace deleted with all its
members is not held back. PostgreSQL only (the embedded SQLite default relies on
``workspaces.services``, which checks the same under the workspace's lock)."""

from django.db import migrations

CREATE = """
CREATE FUNCTION workspaces_keeps_an_admin() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM workspaces_membership WHERE workspace_id = OLD.workspace_id)
       AND NOT EXISTS (
           SELECT 1 FROM workspaces_membership
           WHERE workspace_id = OLD.workspace_id AND role = 'admin'
       ) THEN
        RAISE EXCEPTION 'workspace % would have no admin', OLD.workspace_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'workspace_keeps_an_admin';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER workspace_keeps_an_admin
    AFTER UPDATE OF role OR DELETE ON workspaces_membership
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.role = 'admin')
    EXECUTE FUNCTION workspaces_keeps_an_admin();
"""

DROP = """
DROP TRIGGER IF EXISTS workspace_keeps_an_admin ON workspaces_membership;
DROP FUNCTION IF EXISTS workspaces_keeps_an_admin();
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("workspaces", "0001_initial")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
