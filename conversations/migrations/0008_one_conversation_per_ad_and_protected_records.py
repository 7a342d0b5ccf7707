"""One conversation per ad at a time: where an ad had several, the latest stays current
and the older ones are marked superseded. Runs, messages and their records can no longer
be deleted by a cascade."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F, OuterRef, Subquery


def supersede_older(apps, schema_editor):
    Conversation = apps.get_model("conversations", "Conversation")
    latest = (
        Conversation.objects.filter(ad_id=OuterRef("ad_id"))
        .order_by("-created_at", "-id")
        .values("pk")[:1]
    )
    Conversation.objects.exclude(pk=Subquery(latest)).update(superseded_at=F("updated_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0007_run_resumes_and_enqueued_at"),
        ("drafts", "0007_workspaces_archive_and_protected_records"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="superseded_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="conversation",
            name="ad",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="conversations",
                to="drafts.ad",
            ),
        ),
        migrations.AlterField(
            model_name="message",
            name="conversation",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="messages",
                to="conversations.conversation",
            ),
        ),
        migrations.AlterField(
            model_name="modelcall",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="model_calls",
                to="conversations.run",
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="conversation",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="runs",
                to="conversations.conversation",
            ),
        ),
        migrations.AlterField(
            model_name="runevent",
            name="run",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="events",
                to="conversations.run",
            ),
        ),
        migrations.RunPython(supersede_older, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="conversation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("superseded_at__isnull", True)),
                fields=("ad",),
                name="conversation_one_current_per_ad",
            ),
        ),
        migrations.AlterModelOptions(
            name='run',
            options={'ordering': ['-created_at'], 'permissions': [('view_agent_stats', "Can view the agent's statistics across workspaces"), ('requeue_run', 'Can requeue a failed or stuck run')]},
        ),
    ]
