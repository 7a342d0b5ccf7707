"""Invitations to a workspace: an admin invites someone by username or email address with
a role; nothing of theirs changes until they accept. The admin's answer is the same
whether the account exists or not (no one learns who has an account here), an invitation
expires (``ADSTUDIO_INVITATION_DAYS``), and each step is on the workspace's audit log:
invited, accepted, declined, revoked."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from adstudio.refusals import StateConflict
from workspaces.models import (
    Invitation,
    InvitationKind,
    InvitationStatus,
    Membership,
    Workspace,
)
from workspaces.roles import Action, MemberRole
from workspaces.services import audit_record


class InvitationClosed(StateConflict):
    """The invitation was answered, revoked, or has expired."""

    code = "invitation_closed"


def _account(kind: str, identifier: str):
    """The one active account the invitation names, or None (none, or several sharing an
    email address: then whoever of them signs in with it finds the invitation)."""
    users = get_user_model().objects.filter(is_active=True)
    if kind == InvitationKind.USERNAME:
        return users.filter(username=identifier).first()
    found = list(users.filter(email__iexact=identifier)[:2])
    return found[0] if len(found) == 1 else None


def invitation_send(
    *,
    workspace: Workspace,
    kind: InvitationKind | str,
    identifier: str,
    role: MemberRole | str,
    by,
    as_superuser: bool = False,
) -> Invitation:
    """An open invitation of ``identifier`` to ``workspace`` with ``role``: a new one, or
    the one already open (its role updated). The same whether the account exists."""
    identifier = identifier.strip()
    if kind == InvitationKind.EMAIL:
        identifier = identifier.lower()
    now = timezone.now()
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
        open_one = (
            _open(Invitation.objects.filter(workspace=workspace, kind=kind, identifier=identifier))
            .select_for_update()
            .first()
        )
        if open_one is not None:
            if open_one.role != role:
                open_one.role = role
                open_one.save(update_fields=["role"])
            return open_one
        # An expired invitation still pending in the table is closed before a new one.
        Invitation.objects.filter(
            workspace=workspace,
            kind=kind,
            identifier=identifier,
            status=InvitationStatus.PENDING,
        ).update(status=InvitationStatus.REVOKED, responded_at=now)
        invitation = Invitation.objects.create(
            workspace=workspace,
            kind=kind,
            identifier=identifier,
            invitee=_account(kind, identifier),
            role=role,
            invited_by=by,
            expires_at=now + timedelta(days=settings.ADSTUDIO_INVITATION_DAYS),
        )
        _audit(invitation, by=by, change="invited", as_superuser=as_superuser)
        return invitation


def invitations_for(user) -> QuerySet[Invitation]:
    """The open invitations addressed to ``user``: to their account, or to their email
    address when no account was known for it then."""
    addressed = Q(invitee=user)
    if user.email:
        addressed |= Q(
            invitee__isnull=True, kind=InvitationKind.EMAIL, identifier=user.email.lower()
        )
    return _open(Invitation.objects.filter(addressed)).select_related("workspace", "invited_by")


def invitation_accept(*, invitation: Invitation, user) -> Membership:
    """``user`` joins the workspace with the invitation's role (or keeps the membership
    they have); ``InvitationClosed`` when it can no longer be accepted."""
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=invitation.workspace_id).first()
        invitation = _still_open(invitation)
        invitation.status = InvitationStatus.ACCEPTED
        invitation.invitee = user
        invitation.responded_at = timezone.now()
        invitation.save(update_fields=["status", "invitee", "responded_at"])
        try:
            with transaction.atomic():
                membership = Membership.objects.create(
                    workspace_id=invitation.workspace_id, user=user, role=invitation.role
                )
        except IntegrityError:  # a member already: their role stays as it is
            membership = Membership.objects.get(workspace_id=invitation.workspace_id, user=user)
        _audit(invitation, by=user, change="accepted")
        return membership


def invitation_decline(*, invitation: Invitation, user) -> None:
    with transaction.atomic():
        invitation = _still_open(invitation)
        invitation.status = InvitationStatus.DECLINED
        invitation.responded_at = timezone.now()
        invitation.save(update_fields=["status", "responded_at"])
        _audit(invitation, by=user, change="declined")


def invitation_revoke(*, invitation: Invitation, by, as_superuser: bool = False) -> None:
    with transaction.atomic():
        invitation = _still_open(invitation)
        invitation.status = InvitationStatus.REVOKED
        invitation.responded_at = timezone.now()
        invitation.save(update_fields=["status", "responded_at"])
        _audit(invitation, by=by, change="revoked", as_superuser=as_superuser)


def _open(invitations: QuerySet[Invitation]) -> QuerySet[Invitation]:
    return invitations.filter(status=InvitationStatus.PENDING, expires_at__gt=timezone.now())


def _still_open(invitation: Invitation) -> Invitation:
    """The invitation read again under a lock, if it is still open."""
    current = _open(Invitation.objects.filter(pk=invitation.pk)).select_for_update().first()
    if current is None:
        raise InvitationClosed("This invitation was answered, revoked, or has expired.")
    return current


def _audit(invitation: Invitation, *, by, change: str, as_superuser: bool = False) -> None:
    audit_record(
        workspace_id=invitation.workspace_id,
        user=by,
        action=Action.MANAGE_MEMBERS,
        target=invitation,
        as_superuser=as_superuser,
        change=change,
        role=invitation.role,
        invitee=invitation.identifier,
    )
