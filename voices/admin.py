"""Staff curate the catalogue here: only approved, active voices reach the model."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone

from adstudio.admin.columns import shortened
from adstudio.admin.json import pretty_json
from adstudio.admin.search import SearchByIdMixin
from voices.models import APPROVE_PERMISSION, Voice


@admin.register(Voice)
class VoiceAdmin(SearchByIdMixin, admin.ModelAdmin):
    list_display = [
        "name_short",
        "language_tag",
        "gender",
        "age",
        "style_short",
        "provider",
        "approved",
        "active",
    ]  # fits a laptop's screen beside the filters
    list_filter = ["language", "gender", "provider", "approved", "active"]
    search_fields = ["name", "description", "provider_voice_id"]  # and the id (voiceId)
    readonly_fields = ["metadata_pretty", "created_at", "updated_at"]
    exclude = ["metadata"]
    actions = ["approve", "unapprove"]
    list_per_page = 100
    show_full_result_count = False  # an exact count over 100k rows on every page is slow

    @admin.display(description="Name", ordering="name")
    def name_short(self, voice: Voice):
        return shortened(voice.name, 22)

    @admin.display(description="Language", ordering="language")
    def language_tag(self, voice: Voice) -> str:
        """Its locale when the catalogue has one (``en-US``), else its language."""
        return voice.locale or voice.language

    @admin.display(description="Style", ordering="style")
    def style_short(self, voice: Voice):
        return shortened(voice.style, 22)

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
