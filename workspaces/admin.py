"""The admin follows the role table too: a staff member who is not a superuser sees only
the workspaces they belong to and what is in them, and may change there only what their
role allows. Being staff opens the admin's door; it grants no power over data."""

from __future__ import annotations

from django.contrib import admin

from adstudio.admin_readonly import ReadOnlyAdminMixin
from workspaces.access import may, scoped
from workspaces.models import AuditEntry, Membership, Workspace
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
