"""The Reviewers group: staff who read everything the agent did and activate drafts, and
change or delete nothing.

Its migration creates it; its permissions are granted after every ``migrate`` (and test
flush), once Django has created the permissions of every model, so that a model added
later is readable by reviewers too.
"""

from __future__ import annotations

from django.apps import apps as django_apps
from django.contrib.auth.models import Permission

from adstudio.permission_groups import keep_group

REVIEWERS = "Reviewers"
PRODUCT_APPS = ("workspaces", "drafts", "conversations", "voices")


def reviewer_permissions():
    """View every model of the product's apps, and activate drafts: exactly that (not
    the other ``view_...`` permissions, such as the statistics across workspaces). What
    they see of it is what their workspaces hold (``workspaces.admin``)."""
    viewing = Permission.objects.none()
    for app_label in PRODUCT_APPS:
        for model in django_apps.get_app_config(app_label).get_models():
            viewing |= Permission.objects.filter(
                content_type__app_label=app_label, codename=f"view_{model._meta.model_name}"
            )
    activating = Permission.objects.filter(
        content_type__app_label="drafts", codename="activate_draft"
    )
    return viewing | activating


grant_reviewer_permissions = keep_group(REVIEWERS, reviewer_permissions)
