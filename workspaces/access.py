"""What a user may do in a workspace, read from the role table (``workspaces.roles``).

Every read the API, the admin and the terminal chat make is scoped here, and every write
they make is checked here. Being staff grants nothing; a superuser may do everything,
and their writes outside their own memberships are audited (``workspaces.services``).
"""

from __future__ import annotations

import uuid

from django.db.models import Exists, OuterRef, QuerySet

from adstudio.refusals import NotAllowed
from workspaces.models import Membership
from workspaces.roles import Action, allows, roles_allowed


class ActionNotAllowed(NotAllowed):
    """The user can see the object, but their role does not allow the action."""

    def __init__(self, action: Action | str, role: str | None) -> None:
        self.action = Action(action)
        self.role = role
        who = f"a workspace {role}" if role else "not a member of this workspace"
        super().__init__(f"You are {who}; {self.action.label.lower()} is not allowed.")


def role_in(user, workspace_id: uuid.UUID | None) -> str | None:
    """``user``'s role in the workspace, None when they are not a member."""
    if not user.is_authenticated or workspace_id is None:
        return None
    return (
        Membership.objects.filter(user_id=user.pk, workspace_id=workspace_id)
        .values_list("role", flat=True)
        .first()
    )


def may(user, workspace_id: uuid.UUID | None, action: Action | str) -> bool:
    if user.is_authenticated and user.is_superuser:
        return True
    return allows(role_in(user, workspace_id), action)


def check(user, role: str | None, action: Action | str) -> bool:
    """Raise ``ActionNotAllowed`` unless a user with ``role`` in a workspace may take
    ``action`` there. Returns True when only being a superuser allows it: such writes are
    recorded with that said (``AuditEntry.as_superuser``, ``Activation.as_superuser``)."""
    if allows(role, action):
        return False
    if user.is_authenticated and user.is_superuser:
        return True
    raise ActionNotAllowed(action, role)


def require(user, workspace_id: uuid.UUID | None, action: Action | str) -> bool:
    """``check`` with the user's role in the workspace read first."""
    return check(user, role_in(user, workspace_id), action)


def scoped(
    queryset: QuerySet, user, *, workspace: str = "workspace", action: Action | str = Action.VIEW
) -> QuerySet:
    """``queryset`` narrowed to the objects in workspaces where ``user`` may take
    ``action``; ``workspace`` is the lookup from the queryset's model to its workspace
    (``"ad__workspace"`` for drafts). Everything for a superuser, nothing for anyone
    anonymous."""
    if not user.is_authenticated:
        return queryset.none()
    if user.is_superuser:
        return queryset
    member = Membership.objects.filter(
        user_id=user.pk, workspace_id=OuterRef(workspace), role__in=roles_allowed(action)
    )
    return queryset.filter(Exists(member))


def unscoped(
    queryset: QuerySet, user, *, workspace: str = "workspace", action: Action | str = Action.VIEW
) -> QuerySet:
    """The rest of ``queryset``: the objects ``scoped`` leaves out, those in no workspace
    where ``user`` may take ``action`` (an object in no workspace at all among them).
    Nothing for a superuser, everything for anyone anonymous. For "all or nothing" reads:
    a record shown only when none of its parts is unscoped."""
    if not user.is_authenticated:
        return queryset
    if user.is_superuser:
        return queryset.none()
    member = Membership.objects.filter(
        user_id=user.pk, workspace_id=OuterRef(workspace), role__in=roles_allowed(action)
    )
    return queryset.filter(~Exists(member))
