"""What someone may read changes: PostgreSQL notifies the channel the web processes'
wake-up listener also hears (``conversations.events.wakeups``), so an open stream or long
poll re-checks its reader's access at its next wake-up. The payload is the user whose
access shrank (a membership removed or its role changed, an account deactivated), or
"*" when an ad moved to another workspace (every reader re-checks). Delivered at commit;
PostgreSQL only (elsewhere streams re-check on their own polling)."""

from django.db import migrations

CREATE = """
CREATE FUNCTION workspaces_access_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'workspaces_membership' THEN
        PERFORM pg_notify('adstudio_access', OLD.user_id::text);
    ELSIF TG_TABLE_NAME = 'auth_user' THEN
        PERFORM pg_notify('adstudio_access', NEW.id::text);
    ELSE
        PERFORM pg_notify('adstudio_access', '*');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER workspaces_membership_access_changed
    AFTER UPDATE OF role, user_id, workspace_id OR DELETE ON workspaces_membership
    FOR EACH ROW EXECUTE FUNCTION workspaces_access_changed();
CREATE TRIGGER auth_user_access_changed
    AFTER UPDATE OF is_active ON auth_user
    FOR EACH ROW WHEN (NOT NEW.is_active) EXECUTE FUNCTION workspaces_access_changed();
CREATE TRIGGER drafts_ad_access_changed
    AFTER UPDATE OF workspace_id ON drafts_ad
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id)
    EXECUTE FUNCTION workspaces_access_changed();
"""

DROP = """
DROP TRIGGER IF EXISTS workspaces_membership_access_changed ON workspaces_membership;
DROP TRIGGER IF EXISTS auth_user_access_changed ON auth_user;
DROP TRIGGER IF EXISTS drafts_ad_access_changed ON drafts_ad;
DROP FUNCTION IF EXISTS workspaces_access_changed();
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0002_workspace_keeps_an_admin"),
        ("drafts", "0007_workspaces_archive_and_protected_records"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
