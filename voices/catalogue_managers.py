"""The Catalogue managers group: staff who curate the global voice catalogue (import,
edit, approve and unapprove voices). Nothing of any workspace's ads comes with it; its
permissions are kept up to date on every ``migrate`` (``adstudio.permission_groups``)."""

from __future__ import annotations

from django.contrib.auth.models import Permission

from adstudio.permission_groups import keep_group

CATALOGUE_MANAGERS = "Catalogue managers"
CODENAMES = ("view_voice", "add_voice", "change_voice", "approve_voice")


def catalogue_manager_permissions():
    return Permission.objects.filter(content_type__app_label="voices", codename__in=CODENAMES)


grant_catalogue_manager_permissions = keep_group(CATALOGUE_MANAGERS, catalogue_manager_permissions)
