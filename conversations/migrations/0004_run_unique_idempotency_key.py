"""One run per user and idempotency key, in the database: a retried request finds the
run its key started, and two racing requests with one key make one run.

Runs that two racing requests did make before keep their key on the first of them; the
later ones lose it (they stay, as runs, but no retry will return them)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0003_run_event_notify'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='idempotency_fingerprint',
            field=models.CharField(blank=True, help_text='SHA-256 of the request the idempotency key was first sent with.', max_length=64),
        ),
        migrations.RunSQL(
            """
            UPDATE conversations_run SET idempotency_key = ''
            WHERE id IN (
                SELECT id FROM (
                    SELECT id, ROW_NUMBER() OVER (
                        PARTITION BY requested_by_id, idempotency_key ORDER BY created_at, id
                    ) AS nth
                    FROM conversations_run
                    WHERE idempotency_key <> '' AND requested_by_id IS NOT NULL
                ) AS keyed
                WHERE nth > 1
            )
            """,
            migrations.RunSQL.noop,
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key', ''), _negated=True), fields=('requested_by', 'idempotency_key'), name='run_unique_idempotency_key'),
        ),
    ]
