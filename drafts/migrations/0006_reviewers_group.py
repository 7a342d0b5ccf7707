"""The Reviewers group (drafts.reviewers): its permissions are granted after migrate, once
every model's permissions exist."""

from django.db import migrations

REVIEWERS = "Reviewers"


def create_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=REVIEWERS)


def delete_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=REVIEWERS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("drafts", "0005_activation_record"),
    ]

    operations = [migrations.RunPython(create_group, delete_group)]
