"""Conversations and runs for staff: the whole history, tool calls and results as JSON."""

from __future__ import annotations

from django.contrib import admin

from adstudio.admin_json import pretty_json
from conversations.models import Conversation, Message, ModelCall, Run, RunEvent


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

    # Runs are an execution log: started by the API, never typed in or edited.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
