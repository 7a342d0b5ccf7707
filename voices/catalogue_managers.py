"""The Catalogue managers group: staff who curate the global voice catalogue (import,
edit, approve and unapprove voices). Nothing of any workspace's ads comes with it.

Its permissions are granted after every ``migrate`` (and test flush), once Django has
created them, as the Reviewers group's are (``drafts.reviewers``).
"""

from __future__ import annotations

from django.apps import apps as django_apps
from django.contrib.auth.models import Group, Permission

CATALOGUE_MANAGERS = "Catalogue managers"
CODENAMES = ("view_voice", "add_voice", "change_voice", "approve_voice")


def grant_catalogue_manager_permissions(sender, **kwargs) -> None:
    """post_migrate: runs once per migrate, after the last app's permissions exist."""
    with_models = [config for config in django_apps.get_app_configs() if config.models_module]
    if sender is not with_models[-1]:
        return
    using = kwargs.get("using", "default")
    group, _ = Group.objects.using(using).get_or_create(name=CATALOGUE_MANAGERS)
    group.permissions.set(
        Permission.objects.using(using).filter(
            content_type__app_label="voices", codename__in=CODENAMES
        )
    )
