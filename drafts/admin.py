"""Ads and drafts for staff: browse versions, read payloads, activate a version."""

from __future__ import annotations

from django.contrib import admin, messages

from adstudio.admin_json import pretty_json
from drafts.models import ACTIVATE_PERMISSION, ActivationSource, Ad, Draft
from drafts.services import draft_activate


class DraftInline(admin.TabularInline):
    model = Draft
    fields = ["kind", "label", "status", "summary", "created_by", "created_at", "payload_pretty"]
    readonly_fields = fields
    ordering = ["kind", "-version"]
    extra = 0
    show_change_link = True
    # Drafts are written by the agent or an import, never typed in here.
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Version")
    def label(self, draft: Draft) -> str:
        return draft.label

    @admin.display(description="Payload")
    def payload_pretty(self, draft: Draft):
        return pretty_json(draft.payload)


@admin.register(Ad)
class AdAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "language", "market", "duration_s", "created_at"]
    list_filter = ["language", "market"]
    search_fields = ["title", "client", "audience"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner"]
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [DraftInline]


@admin.register(Draft)
class DraftAdmin(admin.ModelAdmin):
    list_display = ["ad", "kind", "label", "status", "summary", "created_by", "created_at"]
    list_filter = ["kind", "status", "created_by"]
    search_fields = ["ad__title", "summary"]
    list_select_related = ["ad"]
    ordering = ["-ad__created_at", "kind", "-version"]  # newest ads first, then by kind
    exclude = ["payload"]
    readonly_fields = [
        "id",
        "ad",
        "kind",
        "version",
        "status",
        "payload_pretty",
        "summary",
        "created_by",
        "run_id",
        "tool_call_id",
        "parent",
        "created_at",
        "activated_at",
    ]
    actions = ["activate"]

    # Drafts are immutable records: created by the agent, changed only by activation, and
    # never deleted alone (its number would be given again, and the conversation's tool
    # results and events that name it would point at another draft). Deleting the ad
    # deletes them all.
    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_activate_permission(self, request) -> bool:
        return request.user.has_perm(ACTIVATE_PERMISSION)

    @admin.display(description="Version", ordering="version")
    def label(self, draft: Draft) -> str:
        return draft.label

    @admin.display(description="Payload")
    def payload_pretty(self, draft: Draft):
        return pretty_json(draft.payload)

    @admin.action(
        description="Activate selected drafts (archive the version active now)",
        permissions=["activate"],
    )
    def activate(self, request, queryset):
        chosen = list(queryset.select_related("ad").order_by("ad_id", "kind", "-version"))
        seen: set[tuple] = set()
        for draft in chosen:
            key = (draft.ad_id, draft.kind)
            if key in seen:
                self.message_user(
                    request,
                    f"Skipped {draft.ad} {draft.kind} {draft.label}: only one version per "
                    "kind can be active; another one of this ad and kind was selected.",
                    messages.WARNING,
                )
                continue
            seen.add(key)
            result = draft_activate(
                ad=draft.ad, draft_id=draft.pk, by=request.user, source=ActivationSource.ADMIN
            )
            level = messages.SUCCESS if result.changed else messages.INFO
            self.message_user(request, f"{draft.ad}: {result.message}", level)
