"""Conversations and runs for staff: the whole history, tool calls and results as JSON."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from adstudio.admin_json import pretty_json
from conversations.models import Conversation, Message, ModelCall, Run, RunEvent
from conversations.selectors import agent_stats
from conversations.services import run_requeue


class ReadOnlyInline(admin.TabularInline):
    """History is written by runs only; staff read it here."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ["seq", "role", "text", "tool_calls_pretty", "tool_call_id", "name", "is_error", "run"]
    readonly_fields = fields
    ordering = ["seq"]

    @admin.display(description="Tool calls")
    def tool_calls_pretty(self, message: Message):
        return pretty_json(message.tool_calls) if message.tool_calls else "-"


class RunInline(ReadOnlyInline):
    model = Run
    fields = [
        "id",
        "status",
        "provider",
        "model",
        "rounds",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "cost",
        "created_at",
    ]
    readonly_fields = fields
    ordering = ["created_at"]
    show_change_link = True


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "ad",
        "provider",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "cost",
        "created_at",
    ]
    list_filter = ["provider"]
    search_fields = ["ad__title"]
    list_select_related = ["ad"]
    readonly_fields = [
        "id",
        "ad",
        "provider",
        "model",
        "summary",
        "summary_upto_seq",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "cost",
        "created_at",
        "updated_at",
    ]
    inlines = [RunInline, MessageInline]

    # Conversations start from a brief through the API or the chat command.
    def has_add_permission(self, request) -> bool:
        return False


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


class RunEventInline(ReadOnlyInline):
    model = RunEvent
    fields = ["seq", "type", "data_pretty", "created_at"]
    readonly_fields = fields

    @admin.display(description="Data")
    def data_pretty(self, event: RunEvent):
        return pretty_json(event.data)


class RunMessageInline(MessageInline):
    fields = ["seq", "role", "text", "tool_calls_pretty", "tool_call_id", "name", "is_error"]
    readonly_fields = fields
    fk_name = "run"


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "conversation",
        "status",
        "provider",
        "model",
        "rounds",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "error_code",
        "created_at",
    ]
    list_filter = ["status", "provider"]
    search_fields = ["id", "error_message", "input_text"]
    list_select_related = ["conversation__ad"]
    readonly_fields = [f.name for f in Run._meta.concrete_fields]
    inlines = [ModelCallInline, RunMessageInline, RunEventInline]
    actions = ["requeue"]
    change_list_template = "admin/conversations/run/change_list.html"

    # Runs are an execution log: started by the API, never typed in or edited.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Requeue selected failed or stuck runs")
    def requeue(self, request, queryset):
        requeued, skipped = [], []
        for run in queryset.order_by("created_at"):
            (requeued if run_requeue(run=run) else skipped).append(str(run.pk)[:8])
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
        """The agent's health per provider and tool: the figures of GET /api/stats/."""
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
