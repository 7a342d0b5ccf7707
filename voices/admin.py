"""Staff curate the catalogue here: only approved, active voices reach the model."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone

from adstudio.admin_json import pretty_json
from adstudio.admin_search import SearchByIdMixin
from voices.models import APPROVE_PERMISSION, Voice


@admin.register(Voice)
class VoiceAdmin(SearchByIdMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "language",
        "locale",
        "gender",
        "age",
        "style",
        "provider",
        "approved",
        "active",
    ]
    list_filter = ["language", "gender", "provider", "approved", "active"]
    search_fields = ["name", "description", "provider_voice_id"]  # and the id (voiceId)
    readonly_fields = ["metadata_pretty", "created_at", "updated_at"]
    exclude = ["metadata"]
    actions = ["approve", "unapprove"]
    list_per_page = 100
    show_full_result_count = False  # an exact count over 100k rows on every page is slow

    @admin.display(description="Raw provider record")
    def metadata_pretty(self, voice: Voice):
        return pretty_json(voice.metadata)

    def has_approve_permission(self, request) -> bool:
        return request.user.has_perm(APPROVE_PERMISSION)

    @admin.action(
        description="Approve selected voices (offer them to the model)", permissions=["approve"]
    )
    def approve(self, request, queryset):
        # updated_at changes the catalogue version, so cached search facets are refreshed.
        count = queryset.exclude(approved=True).update(approved=True, updated_at=timezone.now())
        self.message_user(request, f"Approved {count} voice(s).", messages.SUCCESS)

    @admin.action(
        description="Unapprove selected voices (hide them from the model)",
        permissions=["approve"],
    )
    def unapprove(self, request, queryset):
        count = queryset.exclude(approved=False).update(approved=False, updated_at=timezone.now())
        self.message_user(request, f"Unapproved {count} voice(s).", messages.SUCCESS)
