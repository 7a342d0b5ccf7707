"""Conversations with the creative director, the runs that answer each user turn, and
the model calls each run made.

The conversation grows by appended ``Message`` rows numbered by ``seq``; nothing rewrites
history, so two writers can never lose each other's messages.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from drafts.models import Ad


class MessageRole(models.TextChoices):
    SYSTEM = "system", "System"
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    TOOL = "tool", "Tool"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"

    @classmethod
    def finished(cls) -> tuple[str, ...]:
        return (cls.SUCCEEDED, cls.FAILED, cls.CANCELLED)


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Indexed by conversation_ad_recent's leading column, like the foreign keys below
    # whose lookups an index of the model already serves: one more would only cost writes.
    ad = models.ForeignKey(
        Ad, on_delete=models.PROTECT, related_name="conversations", db_index=False
    )
    provider = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=100, blank=True)
    summary = models.TextField(
        blank=True, help_text="Rolling summary of the turns no longer sent to the model."
    )
    summary_upto_seq = models.PositiveIntegerField(
        default=0, help_text="Messages up to this seq are covered by the summary."
    )
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cached_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set on the older conversations of an ad that had several before an ad had one at a
    # time; they stay readable, and no message is added to them.
    superseded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["ad", "-created_at"], name="conversation_ad_recent")]
        constraints = [
            # One conversation per ad at a time: parallel first messages land in it, in
            # order (conversations.services.conversation_of).
            models.UniqueConstraint(
                fields=["ad"],
                condition=Q(superseded_at__isnull=True),
                name="conversation_one_current_per_ad",
            ),
        ]

    def __str__(self) -> str:
        return f"Conversation {self.id} on {self.ad}"


class StopCause(models.TextChoices):
    FINAL_ANSWER = "final_answer", "Final answer"
    MAX_ROUNDS = "max_rounds", "Round limit reached"
    TOKEN_BUDGET = "token_budget", "Token budget spent"
    CANCELLED = "cancelled", "Cancelled"
    ERROR = "error", "Error"


class Run(models.Model):
    """One execution of the agent loop for one user turn."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.PROTECT, related_name="runs", db_index=False
    )  # run_conversation_order
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    input_text = models.TextField(help_text="The user's message, stored before anything runs.")
    client_message_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",  # a web process of the release before inserts runs without it
        help_text="The id the web client gave the user's message (useChat's UIMessage id), "
        "which the history returns for it.",
    )
    brief = models.JSONField(
        null=True,
        blank=True,
        help_text="The brief the user's message carries, as given to the model (a brief run's "
        "input_text begins with it); shown to web clients as a data part.",
    )
    replaces = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="replaced_by",
        help_text="The run whose reply this one regenerates: that reply is kept, and no "
        "longer part of the conversation's history.",
    )
    provider = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=100, blank=True)
    rounds = models.PositiveSmallIntegerField(default=0)
    stop_cause = models.CharField(max_length=16, choices=StopCause.choices, blank=True)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cached_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    cost_exact = models.BooleanField(
        default=True, help_text="False when some usage was estimated locally."
    )
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    final_message = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
        help_text="Who sent the message this run answers.",
    )
    idempotency_key = models.CharField(max_length=128, blank=True)
    idempotency_fingerprint = models.CharField(
        max_length=64,
        blank=True,
        help_text="SHA-256 of the request the idempotency key was first sent with.",
    )
    cancel_requested = models.BooleanField(default=False)
    claims = models.PositiveIntegerField(
        default=0,
        help_text="How many times a worker has taken the run; the holder's token: a worker "
        "whose run was taken over finds a higher number and stops.",
    )
    resumes = models.PositiveSmallIntegerField(
        default=0,
        help_text="Times the run was taken over from a worker that stopped (killed, or out "
        "of touch past the stale limit) since it was last queued; past "
        "ADSTUDIO_RUN_MAX_RESUMES it ends failed.",
    )
    enqueued_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its task was last sent again (its turn came, or the recovery sweep); "
        "empty: sent only when the run was stored. The sweep sends a task again only when "
        "the last one may have been lost.",
    )
    trace_context = models.CharField(
        max_length=55,
        blank=True,
        help_text="W3C traceparent of the run's first traced attempt, which the attempts "
        "that resume it link to (set only while tracing is on).",
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="run_status_valid"
            ),
            # A finished run always says when it finished; an unfinished one never does.
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.finished(), finished_at__isnull=False)
                | (~Q(status__in=RunStatus.finished()) & Q(finished_at__isnull=True)),
                name="run_finished_at_matches_status",
            ),
            # A retried request finds the run its key started; two racing ones make one.
            models.UniqueConstraint(
                fields=["requested_by", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="run_unique_idempotency_key",
            ),
        ]
        indexes = [
            models.Index(fields=["conversation", "created_at"], name="run_conversation_order"),
            # The recovery sweep looks only at unfinished runs.
            models.Index(
                fields=["status", "heartbeat_at"],
                condition=Q(status__in=["queued", "running"]),
                name="run_unfinished",
            ),
        ]
        permissions = [
            # The production statistics (GET /api/stats/) span every workspace's runs.
            ("view_agent_stats", "Can view the agent's statistics across workspaces"),
            # Requeueing calls the provider again, at a cost: its own decision.
            ("requeue_run", "Can requeue a failed or stuck run"),
        ]

    def __str__(self) -> str:
        return f"Run {self.id} ({self.status})"


STATS_PERMISSION = "conversations.view_agent_stats"
REQUEUE_PERMISSION = "conversations.requeue_run"


class Message(models.Model):
    conversation = models.ForeignKey(
        Conversation, on_delete=models.PROTECT, related_name="messages", db_index=False
    )  # message_unique_seq
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=MessageRole.choices)
    text = models.TextField(blank=True)
    # Assistant: [{"id", "name", "arguments": {...}, "raw_arguments": "..."}], in call order.
    tool_calls = models.JSONField(default=list, blank=True)
    # Tool results: the call answered, the tool's name, and whether it was an error.
    tool_call_id = models.CharField(max_length=128, blank=True)
    name = models.CharField(max_length=64, blank=True)
    is_error = models.BooleanField(default=False)
    # Provider fields that must go back on later requests (e.g. Kimi reasoning_content).
    provider_data = models.JSONField(default=dict, blank=True)
    # Estimated once at write time, so trimming never re-tokenises the history.
    tokens = models.PositiveIntegerField(default=0)
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
        db_index=False,
    )  # message_run_seq
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation_id", "seq"]
        constraints = [
            # The conversation's order: one message per position, no duplicates.
            models.UniqueConstraint(fields=["conversation", "seq"], name="message_unique_seq"),
            models.CheckConstraint(condition=Q(seq__gte=1), name="message_seq_positive"),
            models.CheckConstraint(
                condition=Q(role__in=MessageRole.values), name="message_role_valid"
            ),
            # A tool result that answers no call id would be rejected by every provider.
            models.CheckConstraint(
                condition=~Q(role=MessageRole.TOOL) | ~Q(tool_call_id=""),
                name="message_tool_has_call_id",
            ),
        ]
        indexes = [
            models.Index(fields=["run", "seq"], name="message_run_seq"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.role}"


class ModelCall(models.Model):
    """One request to a provider: what it cost, how long it took, how it ended."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="model_calls")
    round = models.PositiveSmallIntegerField()
    attempt = models.PositiveSmallIntegerField(default=1)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    latency_ms = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    usage_exact = models.BooleanField(default=True)
    finish_reason = models.CharField(max_length=16, blank=True)
    provider_request_id = models.CharField(max_length=128, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "id"]  # the order the calls were made in
        constraints = [
            models.CheckConstraint(condition=Q(round__gte=1), name="model_call_round_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} round {self.round}"


class RunEventType(models.TextChoices):
    RUN_STARTED = "run.started", "Run started"
    MODEL_CALL_STARTED = "model_call.started", "Model call started"
    TEXT = "text", "Text"
    TOOL_CALL_STARTED = "tool_call.started", "Tool call started"
    TOOL_CALL_FINISHED = "tool_call.finished", "Tool call finished"
    DRAFT_CREATED = "draft.created", "Draft created"
    RUN_FINISHED = "run.finished", "Run finished"


class RunEvent(models.Model):
    """A progress event of a run, numbered so a client can follow the run live."""

    run = models.ForeignKey(
        Run, on_delete=models.PROTECT, related_name="events", db_index=False
    )  # run_event_unique_seq
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=24, choices=RunEventType.choices)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="run_event_unique_seq"),
            models.CheckConstraint(
                condition=Q(type__in=RunEventType.values), name="run_event_type_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.type}"
