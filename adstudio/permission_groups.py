"""Groups whose permissions the product keeps up to date (Reviewers, Catalogue managers):
granted after every ``migrate`` (and test flush), once Django has created the permissions
of every model, so that a model added later is covered too."""

from __future__ import annotations

from collections.abc import Callable

from django.apps import apps as django_apps
from django.contrib.auth.models import Group, Permission
from django.db.models import QuerySet


def keep_group(name: str, permissions: Callable[[], QuerySet[Permission]]):
    """A post_migrate receiver that gives the group ``name`` exactly ``permissions()``,
    once per migrate: after the last app with models (whose permissions exist by then)."""

    def grant(sender, **kwargs) -> None:
        with_models = [c for c in django_apps.get_app_configs() if c.models_module]
        if sender is not with_models[-1]:
            return
        using = kwargs.get("using", "default")
        group, _ = Group.objects.using(using).get_or_create(name=name)
        group.permissions.set(permissions().using(using))

    return grant
