"""The admin follows the role table too: a staff member who is not a superuser sees only
the workspaces they belong to and what is in them, and may change there only what their
role allows. Being staff opens the admin's door; it grants no power over data."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Q

from adstudio.admin.readonly import ReadOnlyAdminMixin
from adstudio.refusals import Refusal
from workspaces.access import may, scoped
from workspaces.invitations import invitation_revoke, invitations_for
from workspaces.models import AuditEntry, Invitation, Membership, Workspace
from workspaces.roles import Action


class WorkspaceScopedAdminMixin:
    """For a ModelAdmin (or an inline) of a model that belongs to a workspace through
    ``workspace_lookup``: its lists, searches, autocompletes and pages hold only the
    objects of the user's workspaces (everything for a superuser)."""

    workspace_lookup = "workspace"

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), request.user, workspace=self.workspace_lookup)

    def workspace_id_of(self, obj) -> object:
        for name in self.workspace_lookup.split("__"):
            obj = getattr(obj, name)
        return obj.pk

    def role_allows(self, request, obj, action: Action) -> bool:
        return may(request.user, self.workspace_id_of(obj), action)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]

    # Members are managed through the API, where the last admin is kept: read here.
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Workspace)
class WorkspaceAdmin(WorkspaceScopedAdminMixin, admin.ModelAdmin):
    workspace_lookup = "pk"
    list_display = ["name", "personal_for", "created_at"]
    search_fields = ["name"]
    readonly_fields = ["personal_for", "created_at"]
    inlines = [MembershipInline]

    def has_add_permission(self, request) -> bool:
        return super().has_add_permission(request) and request.user.is_superuser

    def has_change_permission(self, request, obj=None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or may(request.user, obj.pk, Action.MANAGE_MEMBERS))

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a workspace holds ads, which are archived, never deleted


@admin.register(AuditEntry)
class AuditEntryAdmin(WorkspaceScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "workspace", "user", "action", "target", "as_superuser"]
    list_filter = ["action", "as_superuser"]
    search_fields = ["target", "user__username"]
    list_select_related = ["workspace", "user"]


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The invitations of the workspaces whose members you manage, and those addressed to
    you (accepted or declined through the API, ``/api/invitations/``); an admin revokes
    an open one here."""

    list_display = ["identifier", "workspace", "role", "status", "invited_by", "expires_at"]
    list_filter = ["status", "role"]
    search_fields = ["identifier", "workspace__name"]
    list_select_related = ["workspace", "invited_by"]
    actions = ["revoke"]

    def get_queryset(self, request):
        managed = scoped(
            Invitation.objects.all(), request.user, action=Action.MANAGE_MEMBERS
        ).values("pk")
        mine = invitations_for(request.user).values("pk")
        return super().get_queryset(request).filter(Q(pk__in=managed) | Q(pk__in=mine))

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("workspaces.change_invitation")

    @admin.action(description="Revoke the selected open invitations", permissions=["revoke"])
    def revoke(self, request, queryset):
        revoked, refused = 0, []
        for invitation in queryset.select_related("workspace"):
            if not may(request.user, invitation.workspace_id, Action.MANAGE_MEMBERS):
                refused.append(f"{invitation.identifier}: you do not manage its members")
                continue
            try:
                invitation_revoke(invitation=invitation, by=request.user)
                revoked += 1
            except Refusal as refusal:
                refused.append(f"{invitation.identifier}: {refusal}")
        if revoked:
            self.message_user(request, f"Revoked {revoked} invitation(s).", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)
