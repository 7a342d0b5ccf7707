"""Workspaces own ads; users belong to workspaces through a membership with a role.

A workspace is a team (an agency's team for one client, say) or one person's own
(``personal_for``). What a role allows is in ``workspaces.roles``.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from workspaces.roles import Action, MemberRole


class Workspace(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    # The user whose own workspace this is, made for them on first use; None for a team's.
    personal_for = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="personal_workspace",
    )
    # The most one render may cost in speech (its lines read by the cast voices' TTS
    # providers, USD); None: ADSTUDIO_SPEECH_COST_CAP_USD. A render estimated above it is
    # refused before it starts.
    speech_cost_cap_usd = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="The most one render may cost in speech, USD; empty: the deployment's "
        "ADSTUDIO_SPEECH_COST_CAP_USD.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "created_at"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="workspace_name_not_empty"),
            # A cap below zero would refuse every render, the free ones included.
            models.CheckConstraint(
                condition=Q(speech_cost_cap_usd__isnull=True) | Q(speech_cost_cap_usd__gte=0),
                name="workspace_speech_cost_cap_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=MemberRole.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workspace_id", "user_id"]
        constraints = [
            # One role per person per workspace: the role is the whole of what they may do.
            models.UniqueConstraint(
                fields=["workspace", "user"], name="membership_one_per_user_and_workspace"
            ),
            models.CheckConstraint(
                condition=Q(role__in=MemberRole.values), name="membership_role_valid"
            ),
        ]
        # Lists are scoped by "the workspaces where I am a member": user first.
        indexes = [models.Index(fields=["user", "workspace"], name="membership_user_workspace")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class InvitationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    DECLINED = "declined", "Declined"
    REVOKED = "revoked", "Revoked"


class InvitationKind(models.TextChoices):
    USERNAME = "username", "Username"
    EMAIL = "email", "Email"


class Invitation(models.Model):
    """An admin's invitation to join a workspace with a role: nothing of the invitee's
    changes until they accept it (``workspaces.invitations``). It names them as the admin
    wrote it (a username, or an email address, lower-cased), and is answered the same
    whether such an account exists or not; ``invitee`` is the account it reached, when
    one did (an email address may find its account only when that person signs up)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    kind = models.CharField(max_length=8, choices=InvitationKind.choices)
    identifier = models.CharField(max_length=254)
    invitee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations",
    )
    role = models.CharField(max_length=16, choices=MemberRole.choices)
    status = models.CharField(
        max_length=8, choices=InvitationStatus.choices, default=InvitationStatus.PENDING
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    responded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One open invitation per person per workspace: inviting again answers it.
            models.UniqueConstraint(
                fields=["workspace", "kind", "identifier"],
                condition=Q(status="pending"),
                name="invitation_one_pending_per_person",
            ),
            models.CheckConstraint(
                condition=Q(role__in=MemberRole.values), name="invitation_role_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=InvitationStatus.values), name="invitation_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=InvitationKind.values) & ~Q(identifier=""),
                name="invitation_names_someone",
            ),
            models.CheckConstraint(
                condition=Q(status="pending") | Q(responded_at__isnull=False),
                name="invitation_answered_when",
            ),
            models.CheckConstraint(
                condition=~Q(status="accepted") | Q(invitee__isnull=False),
                name="invitation_accepted_by_someone",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("created_at")),
                name="invitation_expires_after_it_is_made",
            ),
        ]
        indexes = [models.Index(fields=["invitee", "status"], name="invitation_invitee_status")]

    def __str__(self) -> str:
        return f"{self.identifier} to {self.workspace} ({self.role}, {self.status})"


class AuditEntry(models.Model):
    """A change to a workspace's members or ads that is not a draft's activation (those
    are ``drafts.Activation``): who did what to which object, and whether they did it as
    a superuser rather than as a member. Never edited or deleted by the product."""

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="audit")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=32, choices=Action.choices)
    target = models.CharField(max_length=300, help_text="What was changed, as people read it.")
    target_id = models.CharField(max_length=64, blank=True)
    as_superuser = models.BooleanField(
        default=False, help_text="Done by a superuser who is not a member with that right."
    )
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["workspace", "-created_at"], name="audit_workspace_recent")]

    def __str__(self) -> str:
        return f"{self.user} {self.action} {self.target}"
