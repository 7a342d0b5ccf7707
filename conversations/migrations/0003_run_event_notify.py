"""A run's new events notify the channel its waiting web threads listen on
(``conversations.events.wakeups``). One notification per run and statement, delivered at
commit; PostgreSQL only (elsewhere waiters poll)."""

from django.db import migrations

CREATE = """
CREATE FUNCTION conversations_runevent_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('adstudio_run_events', run_id::text)
    FROM (SELECT DISTINCT run_id FROM inserted) AS runs;
    RETURN NULL;
END
$$;
CREATE TRIGGER conversations_runevent_notify
    AFTER INSERT ON conversations_runevent
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION conversations_runevent_notify();
"""

DROP = """
DROP TRIGGER IF EXISTS conversations_runevent_notify ON conversations_runevent;
DROP FUNCTION IF EXISTS conversations_runevent_notify();
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("conversations", "0002_default_order_and_indexes")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
