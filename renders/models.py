"""Scratch tracks: one render per combination of an ad's versions (derived data, made
once, deleted with nothing else), its audio in the project's file storage."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Cast, Coalesce, Concat, Replace


def _hex_or_dash(field: str):
    """A draft id as 32 hex digits (how SQLite stores it; PostgreSQL's text has dashes),
    or "-" for none."""
    text = Replace(Cast(field, models.CharField()), Value("-"), Value(""))
    return Coalesce(text, Value("-"))


def combination_of(voices_id, music_id, sfx_id) -> str:
    return ":".join(i.hex if i else "-" for i in (voices_id, music_id, sfx_id))


class RenderStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RENDERING = "rendering", "Rendering"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Render(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    ad = models.ForeignKey("drafts.Ad", on_delete=models.CASCADE, related_name="renders")
    # The versions rendered; none of a kind: that kind is left out of the mix.
    voices = models.ForeignKey(
        "drafts.Draft", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    music = models.ForeignKey(
        "drafts.Draft", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    sfx = models.ForeignKey(
        "drafts.Draft", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # The versions as one value, unique with the ad on every database (a unique constraint
    # over the nullable columns would let NULLs repeat); a check keeps it true to them.
    combination = models.CharField(max_length=100, editable=False)
    status = models.CharField(max_length=10, choices=RenderStatus.choices, default="queued")
    # Measured from the audio made: each part's start and end, joins, warnings.
    timeline = models.JSONField(default=dict, blank=True)
    audio = models.FileField(upload_to="renders/", blank=True, help_text="Ogg/Opus.")
    wav = models.FileField(upload_to="renders/", blank=True)
    seconds = models.FloatField(null=True, blank=True)
    loudness_lufs = models.FloatField(null=True, blank=True)
    render_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # claimed by a task
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # The same combination is never rendered twice, a missing kind included.
            models.UniqueConstraint(fields=["ad", "combination"], name="render_once_per_versions"),
            models.CheckConstraint(
                condition=Q(
                    combination=Concat(
                        _hex_or_dash("voices_id"),
                        Value(":"),
                        _hex_or_dash("music_id"),
                        Value(":"),
                        _hex_or_dash("sfx_id"),
                    )
                ),
                name="render_combination_is_its_versions",
            ),
            models.CheckConstraint(
                condition=Q(status__in=RenderStatus.values), name="render_status_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=RenderStatus.DONE) | ~Q(audio=""),
                name="render_done_has_audio",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.ad} scratch track ({self.versions_label()})"

    def save(self, *args, **kwargs) -> None:
        self.combination = combination_of(self.voices_id, self.music_id, self.sfx_id)
        super().save(*args, **kwargs)

    def versions_label(self) -> str:
        parts = [
            f"{kind} v{draft.version}" if draft else f"no {kind}"
            for kind, draft in (("voices", self.voices), ("music", self.music), ("sfx", self.sfx))
        ]
        return ", ".join(parts)
