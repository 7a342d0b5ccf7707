"""A run counts the times it was taken over from a worker that stopped, so a run that keeps
killing its worker ends failed (``ADSTUDIO_RUN_MAX_RESUMES``); and it records when its task
was last sent again, so the recovery sweep does not send another while one may be pending."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0006_run_trace_context'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='resumes',
            field=models.PositiveSmallIntegerField(default=0, help_text='Times the run was taken over from a worker that stopped (killed, or out of touch past the stale limit) since it was last queued; past ADSTUDIO_RUN_MAX_RESUMES it ends failed.'),
        ),
        migrations.AddField(
            model_name='run',
            name='enqueued_at',
            field=models.DateTimeField(blank=True, help_text='When its task was last sent again (its turn came, or the recovery sweep); empty: sent only when the run was stored. The sweep sends a task again only when the last one may have been lost.', null=True),
        ),
    ]
