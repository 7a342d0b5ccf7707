"""Evaluation runs kept for comparison: one row per run of a golden set against a provider
and model, one per case with each scorer's result and the conversation it made."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class EvaluationStatus(models.TextChoices):
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    STOPPED = "stopped", "Stopped"  # the cost guard, or an interrupt, ended it early


class EvaluationRun(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    dataset_name = models.CharField(max_length=200)
    dataset_path = models.CharField(max_length=500)
    dataset_hash = models.CharField(max_length=64, help_text="SHA-256 of the set's file.")
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100, blank=True)
    prompt_version = models.CharField(max_length=100)
    git_commit = models.CharField(max_length=40, blank=True)
    status = models.CharField(
        max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.RUNNING
    )
    compared_with = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Each scorer's share of passes, and each number's mean, over the cases it applies to.
    summary = models.JSONField(default=dict, blank=True)
    # The thresholds the command was given and whether they were met (null: none given).
    thresholds = models.JSONField(default=dict, blank=True)
    thresholds_met = models.BooleanField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["-started_at"], name="evaluation_run_recent")]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=EvaluationStatus.values), name="evaluation_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(status=EvaluationStatus.RUNNING) | Q(finished_at__isnull=False),
                name="evaluation_finished_at_set",
            ),
        ]

    def __str__(self) -> str:
        model = f"{self.provider}/{self.model or '-'}"
        return f"{self.dataset_name} on {model} ({self.started_at:%Y-%m-%d %H:%M})"


class EvaluationResult(models.Model):
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    case_name = models.CharField(max_length=200)
    inputs = models.JSONField()
    ad = models.ForeignKey(
        "drafts.Ad", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    conversation = models.ForeignKey(
        "conversations.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # By scorer result name: {"value": true|false|number, "reason": "..."}.
    scores = models.JSONField(default=dict)
    passed = models.BooleanField(help_text="Every pass/fail scorer passed, and the case ran.")
    error = models.TextField(blank=True, help_text="Why the case could not be run or scored.")
    duration_s = models.FloatField(default=0)

    class Meta:
        ordering = ["run", "case_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "case_name"], name="evaluation_case_once_per_run"
            )
        ]

    def __str__(self) -> str:
        return self.case_name
