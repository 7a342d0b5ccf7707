"""Scratch tracks in the admin: the renders made (read only), and the review desk's
"Render the scratch track" button, which asks for one as the API does."""

from __future__ import annotations

import uuid

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import path
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from adstudio.admin.columns import when
from adstudio.admin.readonly import ReadOnlyAdminMixin
from drafts.models import Ad, Draft
from renders.models import Render
from renders.services import render_request
from workspaces.access import may, scoped
from workspaces.roles import Action


@admin.register(Render)
class RenderAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("made", "ad", "versions", "status", "seconds", "render_ms")
    list_filter = ("status",)
    list_select_related = ("ad", "voices", "music", "sfx")

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), request.user, workspace="ad__workspace")

    @admin.display(description="made", ordering="created_at")
    def made(self, render: Render) -> str:
        return when(render.created_at)

    @admin.display(description="versions")
    def versions(self, render: Render) -> str:
        return render.versions_label()

    def get_urls(self):
        ask = path(
            "request/",
            self.admin_site.admin_view(require_POST(self.request_view)),
            name="renders_render_request",
        )
        return [ask, *super().get_urls()]

    def request_view(self, request):
        """The button's post: ``render`` is ``ad:voices:music:sfx`` (draft ids, empty for a
        kind left out); the render is asked for, then back to the page."""
        ad_id, *draft_ids = (request.POST.get("render", "") + ":::").split(":")[:4]
        try:
            ad = Ad.objects.get(pk=uuid.UUID(ad_id))
            ids = [uuid.UUID(i) if i else None for i in draft_ids]
        except (ValueError, Ad.DoesNotExist):
            raise PermissionDenied from None
        if not may(request.user, ad.workspace_id, Action.VIEW):
            raise PermissionDenied
        drafts = {d.pk: d for d in Draft.objects.filter(ad=ad, pk__in=[i for i in ids if i])}
        if len(drafts) != len([i for i in ids if i]):
            raise PermissionDenied  # a draft of another ad
        versions = {
            kind: drafts[i] if i else None
            for kind, i in zip(("voices", "music", "sfx"), ids, strict=True)
        }
        _, queued = render_request(ad=ad, versions=versions, user=request.user)
        if queued:
            self.message_user(request, "The scratch track is being rendered.", messages.INFO)
        back = request.GET.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = f"/admin/drafts/ad/{ad.pk}/change/"
        return HttpResponseRedirect(back)
