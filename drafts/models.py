"""Ads and their immutable, versioned drafts (voices, music, sound effects).

A draft is never edited: a change is a new version. A person activates one version per
kind; the database guarantees there is never more than one active.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from workspaces.models import Workspace


class Ad(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The workspace owns the ad: its members' roles say who may read and change it.
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="ads")
    # Who created it. An ad is an audit record's anchor: deleting a user never takes it.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="ads",
        help_text="Who created the ad.",
    )
    title = models.CharField(max_length=200)
    # The brief, one column per field so staff can filter and the API can validate each.
    client = models.TextField(help_text="What is advertised, e.g. Spotify Premium family plan.")
    audience = models.TextField(blank=True, help_text="Target audience.")
    duration_s = models.PositiveSmallIntegerField(default=30, help_text="Ad length in seconds.")
    market = models.CharField(max_length=64, blank=True, help_text="e.g. TH, US, LATAM.")
    language = models.CharField(max_length=8, help_text="Canonical language code, e.g. th.")
    context = models.TextField(blank=True, help_text="Anything else the creative should know.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Ads are archived, never deleted: their drafts, activations and runs are the record
    # of what went live and why. An archived ad is read-only and left out of lists.
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Audio ads run from a 5 s sting to a 2 min spot; anything else is a typo.
            models.CheckConstraint(
                condition=Q(duration_s__gte=5, duration_s__lte=120), name="ad_duration_in_range"
            ),
            models.CheckConstraint(condition=~Q(language=""), name="ad_language_not_empty"),
        ]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="ad_owner_recent"),
            models.Index(fields=["workspace", "-created_at"], name="ad_workspace_recent"),
        ]

    def __str__(self) -> str:
        return self.title


class DraftKind(models.TextChoices):
    VOICES = "voices", "Voices"
    MUSIC = "music", "Music"
    SFX = "sfx", "Sound effects"


class DraftStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    ACTIVE = "active", "Active"
    ARCHIVED = "archived", "Archived"


class DraftAuthor(models.TextChoices):
    LLM = "llm", "LLM"
    USER = "user", "User"
    IMPORT = "import", "Import"


class Draft(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Indexed by the leading column of draft_unique_version_per_kind (and the FK needs no
    # index of its own, which would only cost writes).
    ad = models.ForeignKey(Ad, on_delete=models.PROTECT, related_name="drafts", db_index=False)
    kind = models.CharField(max_length=8, choices=DraftKind.choices)
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=DraftStatus.choices, default=DraftStatus.DRAFT)
    payload = models.JSONField()
    summary = models.CharField(max_length=500, blank=True)
    created_by = models.CharField(
        max_length=8, choices=DraftAuthor.choices, default=DraftAuthor.LLM
    )
    # The run and tool call that wrote this draft. A plain UUID, not a foreign key:
    # conversations depend on drafts, never the other way round. Looked up through
    # draft_unique_tool_call_per_run, whose leading column it is.
    run_id = models.UUIDField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=128, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["ad_id", "kind", "-version"]
        constraints = [
            # Versions are numbered per ad and kind; a race can never write two v3s.
            models.UniqueConstraint(
                fields=["ad", "kind", "version"], name="draft_unique_version_per_kind"
            ),
            # Exactly what goes live: at most one active version per ad and kind.
            models.UniqueConstraint(
                fields=["ad", "kind"],
                condition=Q(status=DraftStatus.ACTIVE),
                name="draft_one_active_per_kind",
            ),
            # A retried tool call cannot write a second draft.
            models.UniqueConstraint(
                fields=["run_id", "tool_call_id"],
                condition=Q(run_id__isnull=False),
                name="draft_unique_tool_call_per_run",
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="draft_version_positive"),
            models.CheckConstraint(condition=Q(kind__in=DraftKind.values), name="draft_kind_valid"),
            models.CheckConstraint(
                condition=Q(status__in=DraftStatus.values), name="draft_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(created_by__in=DraftAuthor.values), name="draft_created_by_valid"
            ),
            # The payload is in its kind's version shape (drafts.payloads), which the web
            # client reads: never an older shape, never another kind's.
            models.CheckConstraint(
                condition=Q(kind=DraftKind.VOICES, payload__has_key="voiceTracks")
                | Q(kind=DraftKind.MUSIC, payload__has_key="musicPrompt")
                | Q(kind=DraftKind.SFX, payload__has_key="soundFxPrompts"),
                name="draft_payload_in_version_shape",
            ),
            # A draft written by a run always says which tool call wrote it.
            models.CheckConstraint(
                condition=Q(run_id__isnull=True) | ~Q(tool_call_id=""),
                name="draft_run_has_tool_call_id",
            ),
        ]
        indexes = [models.Index(fields=["ad", "kind", "status"], name="draft_ad_kind_status")]
        # Making a version live is a decision of its own, given apart from editing or
        # deleting (drafts are never edited): the Reviewers group has it.
        permissions = [("activate_draft", "Can activate a draft version")]

    def __str__(self) -> str:
        return f"{self.kind} {self.label}"

    @property
    def label(self) -> str:
        """The version as people and the model say it: ``v3``."""
        return f"v{self.version}"


ACTIVATE_PERMISSION = "drafts.activate_draft"


class ActivationSource(models.TextChoices):
    API = "api", "API"
    ADMIN = "admin", "Admin"
    TERMINAL = "terminal", "Terminal"


class Activation(models.Model):
    """One activation, as it happened: who made which version live, through what, and
    which version it replaced. Written by ``draft_activate`` with the change itself."""

    # An activation is an audit record: nothing it points at can be deleted from under it.
    ad = models.ForeignKey(Ad, on_delete=models.PROTECT, related_name="activations")
    draft = models.ForeignKey(Draft, on_delete=models.PROTECT, related_name="activations")
    replaced = models.ForeignKey(
        Draft,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The version active before, archived by this activation.",
    )
    archived_versions = models.JSONField(
        default=list, help_text="Every version this activation archived, in order."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="draft_activations",
    )
    source = models.CharField(max_length=8, choices=ActivationSource.choices)
    as_superuser = models.BooleanField(
        default=False,
        help_text="Done by a superuser whose role in the workspace does not allow it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(source__in=ActivationSource.values), name="activation_source_valid"
            ),
            models.CheckConstraint(
                condition=~Q(replaced=models.F("draft")), name="activation_replaces_another"
            ),
        ]
        indexes = [models.Index(fields=["ad", "-created_at"], name="activation_ad_recent")]

    def __str__(self) -> str:
        replaced = f" (replaced {self.replaced.label})" if self.replaced_id else ""
        return f"{self.draft}{replaced}"
