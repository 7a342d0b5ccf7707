"""Reads of workspaces and their members."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from workspaces.access import scoped
from workspaces.models import Membership, Workspace


def workspaces_for(user) -> QuerySet[Workspace]:
    """The workspaces ``user`` is a member of (every one for a superuser), each with
    ``my_role`` (None where a superuser is not a member)."""
    mine = Membership.objects.filter(user_id=user.pk, workspace_id=OuterRef("pk"))
    return scoped(Workspace.objects.all(), user, workspace="pk").annotate(
        my_role=Subquery(mine.values("role")[:1])
    )


def members_of(*, workspace: Workspace) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(workspace=workspace)
        .select_related("user")
        .order_by("user__username")
    )
