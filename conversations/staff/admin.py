"""Conversations and runs for staff: each conversation read as a transcript (turns, tool
calls with their results, run headers, the drafts the runs wrote), lists that fit a
laptop, and nothing editable: the history is written by runs only."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count, DurationField, ExpressionWrapper, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.template.defaultfilters import truncatechars
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from adstudio.admin.columns import when
from adstudio.admin.readonly import ReadOnlyAdminMixin
from adstudio.admin.search import SearchByIdMixin
from conversations.models import (
    REQUEUE_PERMISSION,
    STATS_PERMISSION,
    Conversation,
    ModelCall,
    Run,
)
from conversations.selectors import agent_stats
from conversations.services import run_requeue
from conversations.staff.event_rows import run_event_rows
from conversations.staff.transcript import conversation_transcript, run_transcript
from workspaces.admin import WorkspaceScopedAdminMixin
from workspaces.roles import Action

# --- Cells of the lists: short, so that a list fits a 1,366 px screen -------------------


def _short(pk: uuid.UUID) -> str:
    return str(pk)[:8]


def _usd(cost) -> str:
    return f"${cost:.4f}"


def _tokens(prompt: int, completion: int) -> str:
    return f"{prompt:,} / {completion:,}"


def _took(value: timedelta | None) -> str:
    if value is None:
        return "-"
    seconds = value.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes} min {seconds} s"


def run_status_badge(run: Run):
    """The status as a coloured badge; why a run stopped or failed in its tooltip."""
    why = " · ".join(part for part in (run.get_stop_cause_display(), run.error_code) if part)
    return format_html(
        '<span class="run-status status-{}" title="{}">{}</span>',
        run.status,
        why,
        run.get_status_display(),
    )


# --- Inlines of the run page -------------------------------------------------------------


class ReadOnlyInline(ReadOnlyAdminMixin, admin.TabularInline):
    """History is written by runs only; staff read it here."""

    extra = 0
    can_delete = False
    show_change_link = False


class ModelCallInline(ReadOnlyInline):
    model = ModelCall
    fields = [
        "round",
        "attempt",
        "provider",
        "model",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "finish_reason",
        "provider_request_id",
        "error_code",
        "error",
    ]
    readonly_fields = fields


# --- Conversations -----------------------------------------------------------------------


def _latest_run():
    return (
        Run.objects.filter(conversation=OuterRef("pk")).exclude(provider="").order_by("-created_at")
    )


@admin.register(Conversation)
class ConversationAdmin(
    WorkspaceScopedAdminMixin, ReadOnlyAdminMixin, SearchByIdMixin, admin.ModelAdmin
):
    """Read-only: conversations are started through the API or the chat command, and are
    the record of what the agent did."""

    workspace_lookup = "ad__workspace"

    list_display = ["short_id", "ad_title", "used", "runs_count", "tokens", "cost_usd", "created"]
    list_display_links = ["short_id"]
    list_filter = ["runs__provider"]
    search_fields = ["ad__title"]  # and the id: SearchByIdMixin
    list_select_related = ["ad"]
    fieldsets = [
        (None, {"fields": [("id", "ad"), "used", ("created_at", "updated_at")]}),
        (
            "Totals",
            {"fields": [("prompt_tokens", "cached_tokens", "completion_tokens", "cost")]},
        ),
        ("Rolling summary", {"fields": ["summary_upto_seq", "summary"], "classes": ["collapse"]}),
    ]
    readonly_fields = [*(f.name for f in Conversation._meta.concrete_fields), "used"]
    change_form_template = "admin/conversations/conversation/change_form.html"

    class Media:
        css = {"all": ["conversations/admin_transcript.css"]}

    def get_queryset(self, request):
        """With what the runs actually used: a conversation's own provider and model may
        be empty (the router picks per run)."""
        runs_count = (
            Run.objects.filter(conversation=OuterRef("pk"))
            .order_by()
            .values("conversation")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                runs_count=Coalesce(Subquery(runs_count), 0),
                used_provider=Subquery(_latest_run().values("provider")[:1]),
                used_model=Subquery(_latest_run().values("model")[:1]),
            )
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The page is the transcript: one page of messages with their runs and drafts."""
        try:
            conversation_id = uuid.UUID(unquote(object_id))
        except ValueError:
            return super().change_view(request, object_id, form_url, extra_context)
        transcript = conversation_transcript(
            conversation_id=conversation_id, page=request.GET.get("page", 1)
        )
        context = {**(extra_context or {}), "transcript": transcript}
        return super().change_view(request, object_id, form_url, context)

    @admin.display(description="Id", ordering="id")
    def short_id(self, conversation: Conversation) -> str:
        return _short(conversation.pk)

    @admin.display(description="Ad", ordering="ad__title")
    def ad_title(self, conversation: Conversation) -> str:
        return truncatechars(conversation.ad.title, 40)

    @admin.display(description="Provider / model", ordering="used_provider")
    def used(self, conversation: Conversation) -> str:
        provider = conversation.used_provider or conversation.provider
        model = conversation.used_model or conversation.model
        return f"{provider or '-'} / {model or '-'}"

    @admin.display(description="Runs", ordering="runs_count")
    def runs_count(self, conversation: Conversation) -> int:
        return conversation.runs_count

    @admin.display(description="Tokens in / out", ordering="prompt_tokens")
    def tokens(self, conversation: Conversation) -> str:
        return _tokens(conversation.prompt_tokens, conversation.completion_tokens)

    @admin.display(description="Cost", ordering="cost")
    def cost_usd(self, conversation: Conversation) -> str:
        return _usd(conversation.cost)

    @admin.display(description="Created", ordering="created_at")
    def created(self, conversation: Conversation):
        return when(conversation.created_at)


# --- Runs --------------------------------------------------------------------------------


@admin.register(Run)
class RunAdmin(WorkspaceScopedAdminMixin, ReadOnlyAdminMixin, SearchByIdMixin, admin.ModelAdmin):
    """Read-only: runs are the execution log, started by the API, never typed in, edited or
    deleted (not even by a superuser; their events and model calls would go with them)."""

    list_display = [
        "short_id",
        "conversation_ad",
        "status_badge",
        "provider_model",
        "duration",
        "tokens",
        "cost_usd",
        "created",
    ]
    list_display_links = ["short_id"]
    list_filter = ["status", "provider"]
    search_fields = ["error_code", "error_message", "input_text"]  # and the id: SearchByIdMixin
    list_select_related = ["conversation__ad"]
    fieldsets = [
        (None, {"fields": [("id", "conversation"), ("status", "stop_cause"), "input_text"]}),
        (
            "Model and usage",
            {
                "fields": [
                    ("provider", "model", "rounds"),
                    ("prompt_tokens", "cached_tokens", "completion_tokens"),
                    ("cost", "cost_exact"),
                ]
            },
        ),
        ("Answer", {"fields": ["final_message", ("error_code", "error_message")]}),
        (
            "Timing and bookkeeping",
            {
                "fields": [
                    ("created_at", "started_at", "finished_at", "heartbeat_at"),
                    ("requested_by_name", "claims", "cancel_requested"),
                    ("idempotency_key", "idempotency_fingerprint"),
                ],
                "classes": ["collapse"],
            },
        ),
    ]
    readonly_fields = [*(f.name for f in Run._meta.concrete_fields), "requested_by_name"]
    inlines = [ModelCallInline]
    actions = ["requeue"]
    workspace_lookup = "conversation__ad__workspace"
    change_list_template = "admin/conversations/run/change_list.html"
    change_form_template = "admin/conversations/run/change_form.html"

    class Media:
        css = {"all": ["conversations/admin_transcript.css"]}

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                took=ExpressionWrapper(
                    F("finished_at") - F("started_at"), output_field=DurationField()
                )
            )
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The run's own messages, read as the conversation's transcript is."""
        try:
            run_id = uuid.UUID(unquote(object_id))
        except ValueError:
            return super().change_view(request, object_id, form_url, extra_context)
        transcript = run_transcript(run_id=run_id, page=request.GET.get("page", 1))
        context = {
            **(extra_context or {}),
            "transcript": transcript,
            "event_rows": run_event_rows(run_id=run_id),
        }
        return super().change_view(request, object_id, form_url, context)

    @admin.display(description="Requested by")
    def requested_by_name(self, run: Run) -> str:
        """By name, not as a link to the users' admin, which few may open."""
        return run.requested_by.get_username() if run.requested_by_id else "-"

    @admin.display(description="Id", ordering="id")
    def short_id(self, run: Run) -> str:
        return _short(run.pk)

    @admin.display(description="Ad", ordering="conversation__ad__title")
    def conversation_ad(self, run: Run):
        """The ad's title, linking to the run's conversation (its id in the tooltip)."""
        url = reverse("admin:conversations_conversation_change", args=[run.conversation_id])
        return format_html(
            '<a href="{}" title="Conversation {}">{}</a>',
            url,
            run.conversation_id,
            truncatechars(run.conversation.ad.title, 24),
        )

    @admin.display(description="Provider / model", ordering="provider")
    def provider_model(self, run: Run):
        if not run.provider:
            return "-"
        return format_html('{}<br><span class="quiet">{}</span>', run.provider, run.model)

    @admin.display(description="Status", ordering="status")
    def status_badge(self, run: Run):
        return run_status_badge(run)

    @admin.display(description="Duration", ordering="took")
    def duration(self, run: Run) -> str:
        return _took(run.took)

    @admin.display(description="Tokens in / out", ordering="prompt_tokens")
    def tokens(self, run: Run) -> str:
        return _tokens(run.prompt_tokens, run.completion_tokens)

    @admin.display(description="Cost", ordering="cost")
    def cost_usd(self, run: Run) -> str:
        return _usd(run.cost) if run.cost_exact else f"≈{_usd(run.cost)}"

    @admin.display(description="Created", ordering="created_at")
    def created(self, run: Run):
        return when(run.created_at)

    def has_requeue_permission(self, request) -> bool:
        """Requeueing calls the provider again: its own permission (Reviewers lack it)."""
        return request.user.has_perm(REQUEUE_PERMISSION)

    @admin.action(description="Requeue selected failed or stuck runs", permissions=["requeue"])
    def requeue(self, request, queryset):
        requeued, skipped, refused = [], [], []
        for run in queryset.select_related("conversation__ad").order_by("created_at"):
            if not self.role_allows(request, run, Action.CHAT):
                refused.append(str(run.pk)[:8])
                continue
            (requeued if run_requeue(run=run) else skipped).append(str(run.pk)[:8])
        if refused:
            self.message_user(
                request,
                f"Not requeued (your role in their workspace does not allow running the "
                f"director): {', '.join(refused)}.",
                messages.WARNING,
            )
        if requeued:
            self.message_user(request, f"Requeued {len(requeued)} run(s).", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"Skipped {len(skipped)} run(s) that succeeded, were cancelled, are running "
                f"or have a later turn in their conversation: {', '.join(skipped)}.",
                messages.WARNING,
            )

    def get_urls(self):
        stats = path("stats/", self.admin_site.admin_view(self.stats_view), name="agent-stats")
        return [stats, *super().get_urls()]

    def stats_view(self, request):
        """The agent's health per provider and tool: the figures of GET /api/stats/, for
        those with the permission (they span every workspace)."""
        if not request.user.has_perm(STATS_PERMISSION):
            raise PermissionDenied
        try:
            days = max(1, min(int(request.GET.get("days", "7")), 366))
        except ValueError:
            days = 7
        until = timezone.now()
        context = {
            **self.admin_site.each_context(request),
            "title": f"Agent statistics, last {days} day(s)",
            "stats": agent_stats(since=until - timedelta(days=days), until=until),
            "days": days,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/conversations/run/stats.html", context)
