"""Workspaces own ads: every existing user gets a personal workspace (as its admin)
holding the ads they own. Ads are archived rather than deleted, and the records that
say what went live (activations, drafts) can no longer be deleted by a cascade."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def personal_workspaces(apps, schema_editor):
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Workspace = apps.get_model("workspaces", "Workspace")
    Membership = apps.get_model("workspaces", "Membership")
    Ad = apps.get_model("drafts", "Ad")
    for user in User.objects.order_by("pk").iterator():
        workspace, created = Workspace.objects.get_or_create(
            personal_for=user, defaults={"name": f"{user.username}'s workspace"}
        )
        if created:
            Membership.objects.create(workspace=workspace, user=user, role="admin")
        Ad.objects.filter(owner=user, workspace__isnull=True).update(workspace=workspace)
    _check_constraints_now(schema_editor)


def no_workspaces(apps, schema_editor):
    """Back to ads owned by users alone: the personal workspaces go (team workspaces
    cannot be expressed without them and are refused)."""
    Workspace = apps.get_model("workspaces", "Workspace")
    Ad = apps.get_model("drafts", "Ad")
    teams = Ad.objects.filter(workspace__personal_for__isnull=True)
    if teams.exists():
        raise RuntimeError(
            f"{teams.count()} ads are in team workspaces; move them to their owners' "
            "personal workspaces before reversing this migration."
        )
    Ad.objects.update(workspace=None)
    Workspace.objects.filter(personal_for__isnull=False).delete()
    _check_constraints_now(schema_editor)


def _check_constraints_now(schema_editor):
    """PostgreSQL checks deferred foreign keys at commit; the ALTER TABLEs that follow in
    this migration's transaction cannot run while those checks are pending."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("drafts", "0006_reviewers_group"),
        ("workspaces", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="activation",
            name="as_superuser",
            field=models.BooleanField(
                default=False,
                help_text="Done by a superuser whose role in the workspace does not allow it.",
            ),
        ),
        migrations.AddField(
            model_name="ad",
            name="archived_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="ad",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="ads",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(personal_workspaces, no_workspaces),
        migrations.AlterField(
            model_name="ad",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="ads",
                to="workspaces.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="activation",
            name="ad",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="activations",
                to="drafts.ad",
            ),
        ),
        migrations.AlterField(
            model_name="activation",
            name="draft",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="activations",
                to="drafts.draft",
            ),
        ),
        migrations.AlterField(
            model_name="activation",
            name="replaced",
            field=models.ForeignKey(
                blank=True,
                help_text="The version active before, archived by this activation.",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="drafts.draft",
            ),
        ),
        migrations.AlterField(
            model_name="ad",
            name="owner",
            field=models.ForeignKey(
                help_text="Who created the ad.",
                on_delete=django.db.models.deletion.PROTECT,
                related_name="ads",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="draft",
            name="ad",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="drafts",
                to="drafts.ad",
            ),
        ),
        migrations.AddIndex(
            model_name="ad",
            index=models.Index(fields=["workspace", "-created_at"], name="ad_workspace_recent"),
        ),
    ]
