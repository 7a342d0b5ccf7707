"""Writes to workspaces: the personal workspace made on first use, members and their
roles (a workspace never loses its last admin), and the audit log."""

from __future__ import annotations

from functools import cache

from django.db import IntegrityError, connection, transaction

from adstudio.db.sql import column, columns, from_row, quote_name
from adstudio.refusals import StateConflict
from workspaces.models import AuditEntry, Membership, Workspace
from workspaces.roles import Action, MemberRole


class LastAdmin(StateConflict):
    """The change would leave the workspace with no admin to manage it."""

    code = "last_admin"


def workspace_personal(*, user) -> Workspace:
    """``user``'s own workspace, made with them as its admin the first time it is asked
    for. Safe under concurrency: the one-per-user constraint makes a racing second
    creation fail, and its caller reads the winner's."""
    with connection.cursor() as cursor:
        cursor.execute(_personal_sql(), [user.pk])
        row = cursor.fetchone()
    if row is not None:
        return from_row(Workspace, row)[0]
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(
                name=f"{user.get_username()}'s workspace", personal_for=user
            )
            Membership.objects.create(workspace=workspace, user=user, role=MemberRole.ADMIN)
            return workspace
    except IntegrityError:
        return Workspace.objects.get(personal_for=user)


@cache
def _personal_sql() -> str:
    """Plain SQL: it runs for every ad made and every generate request, and compiling its
    queryset cost more than running it. One row at most (``personal_for`` is unique)."""
    table = quote_name(Workspace._meta.db_table)
    return (
        f"SELECT {columns(Workspace, table)} FROM {table} "
        f"WHERE {table}.{column(Workspace, 'personal_for')} = %s"
    )


def workspace_create(*, name: str, by) -> Workspace:
    """A team workspace, with its creator as admin."""
    with transaction.atomic():
        workspace = Workspace.objects.create(name=name)
        Membership.objects.create(workspace=workspace, user=by, role=MemberRole.ADMIN)
        return workspace


def audit_record(
    *,
    workspace_id,
    user,
    action: Action | str,
    target: object,
    as_superuser: bool = False,
    **detail,
) -> AuditEntry:
    return AuditEntry.objects.create(
        workspace_id=workspace_id,
        user=user if user is not None and user.is_authenticated else None,
        action=action,
        target=str(target)[:300],
        target_id=str(getattr(target, "pk", "") or ""),
        as_superuser=as_superuser,
        detail={key: str(value) for key, value in detail.items()},
    )


def _lock(workspace: Workspace) -> None:
    """Serialise member changes per workspace: the last-admin rule reads the admins."""
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()


def _keep_an_admin(membership: Membership) -> None:
    """``LastAdmin`` if ``membership`` is its workspace's only admin (under ``_lock``)."""
    others = Membership.objects.filter(workspace_id=membership.workspace_id, role=MemberRole.ADMIN)
    if membership.role == MemberRole.ADMIN and not others.exclude(pk=membership.pk).exists():
        raise LastAdmin("A workspace keeps at least one admin: make another member admin first.")


def _audit_member(membership: Membership, *, by, as_superuser: bool, change: str, **detail) -> None:
    audit_record(
        workspace_id=membership.workspace_id,
        user=by,
        action=Action.MANAGE_MEMBERS,
        target=membership,
        as_superuser=as_superuser,
        change=change,
        **detail,
    )


def member_add(
    *, workspace: Workspace, user, role: MemberRole | str, by, as_superuser: bool = False
) -> Membership:
    """Add ``user`` with ``role``; ``IntegrityError`` if they are a member already."""
    with transaction.atomic():
        _lock(workspace)
        membership = Membership.objects.create(workspace=workspace, user=user, role=role)
        _audit_member(membership, by=by, as_superuser=as_superuser, change="added", role=role)
        return membership


def member_change(
    *, membership: Membership, role: MemberRole | str, by, as_superuser: bool = False
) -> Membership:
    """Give a member another role; ``LastAdmin`` if it would leave no admin."""
    with transaction.atomic():
        _lock(membership.workspace)
        membership.refresh_from_db()
        if membership.role == role:
            return membership
        _keep_an_admin(membership)
        before, membership.role = membership.role, role
        membership.save(update_fields=["role", "updated_at"])
        _audit_member(
            membership, by=by, as_superuser=as_superuser, change="role", before=before, role=role
        )
        return membership


def member_remove(*, membership: Membership, by, as_superuser: bool = False) -> None:
    """Remove a member; ``LastAdmin`` if they are the workspace's last admin."""
    with transaction.atomic():
        _lock(membership.workspace)
        membership.refresh_from_db()
        _keep_an_admin(membership)
        _audit_member(
            membership, by=by, as_superuser=as_superuser, change="removed", role=membership.role
        )
        membership.delete()
