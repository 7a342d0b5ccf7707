"""Each claim of a run raises ``Run.claims``: a worker whose run another worker took over
(after a database outage longer than the stale limit) finds out and stops."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0004_run_unique_idempotency_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='claims',
            field=models.PositiveIntegerField(default=0, help_text="How many times a worker has taken the run; the holder's token: a worker whose run was taken over finds a higher number and stops."),
        ),
    ]
