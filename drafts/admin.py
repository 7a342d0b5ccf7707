"""Ads and drafts for staff: read each version as its kind deserves, compare it with the
version before, activate it where you look at it, and see who activated what."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from adstudio.admin.columns import shortened, when
from adstudio.admin.readonly import ReadOnlyAdminMixin
from adstudio.admin.search import SearchByIdMixin
from drafts.models import ACTIVATE_PERMISSION, Activation, ActivationSource, Ad, Draft, DraftKind
from drafts.review import diff, sound_effects, voice_tracks
from drafts.selectors import drafts_archived_by_activating
from drafts.services import AdArchived, ad_archive, draft_activate
from workspaces.access import require
from workspaces.admin import WorkspaceScopedAdminMixin
from workspaces.roles import Action


def status_badge(draft: Draft):
    return format_html(
        '<span class="draft-status status-{}">{}</span>', draft.status, draft.get_status_display()
    )


def draft_link(draft: Draft | None):
    if draft is None:
        return "-"
    url = reverse("admin:drafts_draft_change", args=[draft.pk])
    return format_html('<a href="{}">{} {}</a>', url, draft.kind, draft.label)


def comparison_bases(draft: Draft) -> dict[str, Draft]:
    """What a draft can be compared with, the default first: the version active now (when
    it is another one) and the one before it."""
    bases = {}
    active = (
        Draft.objects.filter(ad_id=draft.ad_id, kind=draft.kind, status="active")
        .exclude(pk=draft.pk)
        .first()
    )
    if active is not None:
        bases["active"] = active
    if draft.parent is not None:
        bases["previous"] = draft.parent
    return bases


class ReviewMedia:
    css = {"all": ["drafts/review.css"]}


@admin.register(Ad)
class AdAdmin(WorkspaceScopedAdminMixin, SearchByIdMixin, admin.ModelAdmin):
    """Ads are created through the API and the chat command, edited here by those whose
    role allows it, and archived, never deleted."""

    list_display = [
        "title_short",
        "workspace_name",
        "owner",
        "language",
        "market",
        "length",
        "created",
    ]
    list_filter = ["language", "market", ("archived_at", admin.EmptyFieldListFilter)]
    search_fields = ["title", "client", "audience"]
    list_select_related = ["owner", "workspace"]
    readonly_fields = ["id", "workspace", "owner_name", "created_at", "updated_at", "archived_at"]
    actions = ["archive"]
    fieldsets = [
        (
            "Brief",
            {
                "fields": [
                    "title",
                    "client",
                    "audience",
                    "duration_s",
                    "market",
                    "language",
                    "context",
                ]
            },
        ),
        (
            "Record",
            {
                "fields": [
                    "workspace",
                    "owner_name",
                    "id",
                    "created_at",
                    "updated_at",
                    "archived_at",
                ],
                "classes": ["collapse"],
            },
        ),
    ]
    change_form_template = "admin/drafts/ad/change_form.html"
    Media = ReviewMedia

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="Title", ordering="title")
    def title_short(self, ad: Ad):
        return shortened(ad.title, 26)

    @admin.display(description="Length", ordering="duration_s")
    def length(self, ad: Ad) -> str:
        return f"{ad.duration_s} s"

    @admin.display(description="Workspace", ordering="workspace__name")
    def workspace_name(self, ad: Ad):
        return shortened(ad.workspace.name, 18)

    @admin.display(description="Created", ordering="created_at")
    def created(self, ad: Ad):
        return when(ad.created_at)

    @admin.display(description="Owner")
    def owner_name(self, ad: Ad) -> str:
        """The owner by name, not as a link to the users' admin, which few may open."""
        return ad.owner.get_username() if ad.owner_id else "-"

    def has_change_permission(self, request, obj=None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (
            obj is None
            or (obj.archived_at is None and self.role_allows(request, obj, Action.EDIT_AD))
        )

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # archived instead: its drafts, activations and runs are the record

    def has_archive_permission(self, request) -> bool:
        return request.user.has_perm("drafts.change_ad")

    @admin.action(
        description="Archive selected ads (read-only, out of lists)", permissions=["archive"]
    )
    def archive(self, request, queryset):
        archived, refused = 0, []
        for ad in queryset:
            if not self.role_allows(request, ad, Action.ARCHIVE_AD):
                refused.append(ad.title)
                continue
            as_superuser = require(request.user, ad.workspace_id, Action.ARCHIVE_AD)
            ad_archive(ad=ad, by=request.user, as_superuser=as_superuser)
            archived += 1
        if archived:
            self.message_user(request, f"Archived {archived} ad(s).", messages.SUCCESS)
        if refused:
            self.message_user(
                request,
                f"Not archived (your role does not allow it): {', '.join(refused)}.",
                messages.WARNING,
            )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        ad = self.get_object(request, admin.utils.unquote(object_id))
        if ad is not None:
            extra_context = {**(extra_context or {}), **self._review_context(request, ad)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _review_context(self, request: HttpRequest, ad: Ad) -> dict:
        """Per kind, every version newest first with the active and latest picked out; the
        ad's activations, newest first."""
        drafts = list(ad.drafts.order_by("kind", "-version"))
        panels = []
        for kind in DraftKind:
            versions = [d for d in drafts if d.kind == kind]
            panels.append(
                {
                    "kind": kind.label,
                    "versions": versions,
                    "active": next((d for d in versions if d.status == "active"), None),
                    "latest": versions[0] if versions else None,
                }
            )
        activations = ad.activations.select_related("draft", "replaced", "user")[:50]
        return {
            "conversations": ad.conversations.order_by("-created_at")[:5],
            "panels": panels,
            "activations": activations,
            "can_activate": request.user.has_perm(ACTIVATE_PERMISSION)
            and ad.archived_at is None
            and self.role_allows(request, ad, Action.ACTIVATE),
            "back_here": request.path,
        }


@admin.register(Draft)
class DraftAdmin(WorkspaceScopedAdminMixin, ReadOnlyAdminMixin, SearchByIdMixin, admin.ModelAdmin):
    """Read-only but for activation: drafts are immutable records, created by the agent,
    changed only by activation, and never deleted alone (the number would be given again,
    and the tool results and events that name it would point at another draft). Deleting
    the ad deletes them all."""

    list_display = [
        "ad_title",
        "kind",
        "label",
        "status_badge",
        "summary_short",
        "created",
    ]  # who wrote it (the model, a person, an import): a filter, not a column
    list_filter = ["kind", "status", "created_by"]
    search_fields = ["ad__title", "summary"]
    list_select_related = ["ad"]
    ordering = ["-ad__created_at", "kind", "-version"]  # newest ads first, then by kind
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "ad",
                    ("kind", "label", "status_badge"),
                    "summary",
                    ("created_by", "run_link", "created_at", "activated_at"),
                ]
            },
        ),
    ]
    readonly_fields = [
        "ad",
        "kind",
        "label",
        "status_badge",
        "summary",
        "created_by",
        "run_link",
        "created_at",
        "activated_at",
    ]
    actions = ["activate"]
    change_form_template = "admin/drafts/draft/change_form.html"
    Media = ReviewMedia
    workspace_lookup = "ad__workspace"

    def has_activate_permission(self, request) -> bool:
        return request.user.has_perm(ACTIVATE_PERMISSION)

    @admin.display(description="Version", ordering="version")
    def label(self, draft: Draft) -> str:
        return draft.label

    @admin.display(description="Ad", ordering="ad__title")
    def ad_title(self, draft: Draft):
        return shortened(draft.ad.title, 18)

    @admin.display(description="Summary")
    def summary_short(self, draft: Draft):
        return shortened(draft.summary, 48)

    @admin.display(description="Created", ordering="created_at")
    def created(self, draft: Draft):
        return when(draft.created_at)

    @admin.display(description="Status", ordering="status")
    def status_badge(self, draft: Draft):
        return status_badge(draft)

    @admin.display(description="Written by run")
    def run_link(self, draft: Draft):
        if draft.run_id is None:
            return "-"
        url = reverse("admin:conversations_run_change", args=[draft.run_id])
        return format_html('<a href="{}">{}</a>', url, str(draft.run_id)[:8])

    def change_view(self, request, object_id, form_url="", extra_context=None):
        draft = self.get_object(request, admin.utils.unquote(object_id))
        if draft is not None:
            extra_context = {**(extra_context or {}), **self._review_context(request, draft)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _review_context(self, request: HttpRequest, draft: Draft) -> dict:
        """The draft's content, and what it changes from the version it is compared with:
        the active one by default (what this draft would replace), or the one before it
        (``?compare=previous``)."""
        language = draft.ad.language
        bases = comparison_bases(draft)
        chosen = request.GET.get("compare")
        base_name = chosen if chosen in bases else next(iter(bases), None)
        base = bases.get(base_name)
        changes = diff(base, draft, language=language) if base else None
        return {
            "draft": draft,
            "voice_tracks": voice_tracks(draft.payload, language=language),
            "sound_effects": sound_effects(draft.payload),
            "bases": bases,
            "base_name": base_name,
            "base": base,
            "changes": changes,
            "identical": changes is not None and all(line.change == "same" for line in changes),
            "activations": draft.activations.select_related("replaced", "user"),
            "can_activate": self.has_activate_permission(request)
            and draft.status != "active"
            and draft.ad.archived_at is None
            and self.role_allows(request, draft, Action.ACTIVATE),
        }

    def get_urls(self):
        activate = path(
            "<path:object_id>/activate/",
            self.admin_site.admin_view(self.activate_view),
            name="drafts_draft_activate",
        )
        return [activate, *super().get_urls()]

    def activate_view(self, request: HttpRequest, object_id: str):
        """Activate one draft: a confirmation page that says what will be archived, then
        the activation (POST), back to where the reviewer came from."""
        if not self.has_activate_permission(request):
            raise PermissionDenied
        draft = get_object_or_404(self.get_queryset(request).select_related("ad"), pk=object_id)
        if not self.role_allows(request, draft, Action.ACTIVATE):
            raise PermissionDenied
        back = request.POST.get("next") or request.GET.get("next")
        if not back or not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            back = reverse("admin:drafts_draft_change", args=[draft.pk])
        if request.method == "POST":
            try:
                result = self._activate(request, draft)
            except AdArchived as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                level = messages.SUCCESS if result.changed else messages.INFO
                self.message_user(request, f"{draft.ad}: {result.message}", level)
            return HttpResponseRedirect(back)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Activate {draft.kind} {draft.label}?",
            "opts": self.model._meta,
            "draft": draft,
            "archives": list(drafts_archived_by_activating(draft)),
            "next": back,
        }
        return TemplateResponse(request, "admin/drafts/draft/activate_confirmation.html", context)

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
            if not self.role_allows(request, draft, Action.ACTIVATE):
                self.message_user(
                    request,
                    f"Skipped {draft.ad} {draft.kind} {draft.label}: your role in its "
                    "workspace does not allow activating.",
                    messages.WARNING,
                )
                continue
            try:
                result = self._activate(request, draft)
            except AdArchived as exc:
                self.message_user(request, str(exc), messages.WARNING)
                continue
            level = messages.SUCCESS if result.changed else messages.INFO
            self.message_user(request, f"{draft.ad}: {result.message}", level)

    def _activate(self, request, draft: Draft):
        return draft_activate(
            ad=draft.ad,
            draft_id=draft.pk,
            by=request.user,
            source=ActivationSource.ADMIN,
            as_superuser=require(request.user, draft.ad.workspace_id, Action.ACTIVATE),
        )


@admin.register(Activation)
class ActivationAdmin(
    WorkspaceScopedAdminMixin, ReadOnlyAdminMixin, SearchByIdMixin, admin.ModelAdmin
):
    """The activation log: written by activations only, never edited or deleted."""

    workspace_lookup = "ad__workspace"

    list_display = ["created", "ad_title", "activated", "replaced_version", "user", "source"]
    list_display_links = ["created"]
    list_filter = ["source", "draft__kind"]
    search_fields = ["ad__title", "user__username"]
    list_select_related = ["ad", "draft", "replaced", "user"]
    date_hierarchy = "created_at"

    Media = ReviewMedia

    @admin.display(description="When", ordering="created_at")
    def created(self, activation: Activation):
        return when(activation.created_at)

    @admin.display(description="Ad", ordering="ad__title")
    def ad_title(self, activation: Activation):
        return shortened(activation.ad.title, 26)

    @admin.display(description="Activated", ordering="draft__kind")
    def activated(self, activation: Activation):
        return draft_link(activation.draft)

    @admin.display(description="Replaced")
    def replaced_version(self, activation: Activation):
        return draft_link(activation.replaced)
