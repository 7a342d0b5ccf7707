"""Admin pages of records that only the product writes (conversations, runs, drafts,
activations): staff read them there, and nobody adds, edits or deletes one."""

from __future__ import annotations


class ReadOnlyAdminMixin:
    """For a ModelAdmin or an inline: every add, change and delete permission refused,
    whatever the user's own permissions (a superuser's included)."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
