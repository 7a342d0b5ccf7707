"""Workspaces own ads; users belong to workspaces through a membership with a role.

A workspace is a team (an agency's team for one client, say) or one person's own
(``personal_for``). What a role allows is in ``workspaces.roles``.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from workspaces.roles import Action, Role


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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "created_at"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="workspace_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workspace_id", "user_id"]
        constraints = [
            # One role per person per workspace: the role is the whole of what they may do.
            models.UniqueConstraint(
                fields=["workspace", "user"], name="membership_one_per_user_and_workspace"
            ),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]
        # Lists are scoped by "the workspaces where I am a member": user first.
        indexes = [models.Index(fields=["user", "workspace"], name="membership_user_workspace")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


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
