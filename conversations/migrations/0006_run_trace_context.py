"""A run keeps the trace context of its first traced attempt, so that an attempt that
resumes it (after its worker died) links to it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0005_run_claims'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='trace_context',
            field=models.CharField(blank=True, default='', help_text="W3C traceparent of the run's first traced attempt, which the attempts that resume it link to (set only while tracing is on).", max_length=55),
            preserve_default=False,
        ),
    ]
