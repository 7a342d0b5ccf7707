"""API tokens in the admin: each token's prefix, owner, when it was made, used, expires
and was revoked; never the token (it is not stored) nor its digest. Revoking is an
action; nothing else is written here."""

from __future__ import annotations

from django.contrib import admin, messages

from accounts.models import ApiToken
from accounts.services import token_revoke
from adstudio.admin.columns import when


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["shown_prefix", "user", "name", "made", "last_used", "expires", "revoked"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "user__username"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    fields = ["shown_prefix", "user", "name", "created_at", "last_used_at", "expires_at",
              "revoked_at"]  # fmt: skip
    readonly_fields = fields
    actions = ["revoke"]

    @admin.display(description="token", ordering="prefix")
    def shown_prefix(self, token: ApiToken) -> str:
        return f"{token.prefix}…"

    @admin.display(description="made", ordering="created_at")
    def made(self, token: ApiToken) -> str:
        return when(token.created_at)

    @admin.display(description="last used", ordering="last_used_at")
    def last_used(self, token: ApiToken) -> str:
        return when(token.last_used_at) if token.last_used_at else "-"

    @admin.display(description="expires", ordering="expires_at")
    def expires(self, token: ApiToken) -> str:
        return when(token.expires_at)

    @admin.display(description="revoked", ordering="revoked_at")
    def revoked(self, token: ApiToken) -> str:
        return when(token.revoked_at) if token.revoked_at else "-"

    # A token is shown once, to the person it is made for (the API, create_api_token):
    # staff cannot make one for someone else here.
    def has_add_permission(self, request) -> bool:
        return False

    # Every field is the product's to write; revoking is the action below.
    def has_change_permission(self, request, obj=None) -> bool:
        return False

    # A revoked token stays on record, with when.
    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("accounts.change_apitoken")

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request, queryset) -> None:
        revoked = sum(token_revoke(token=token) for token in queryset)
        self.message_user(
            request, f"{revoked} token(s) revoked.", messages.SUCCESS if revoked else messages.INFO
        )
