"""Scratch tracks: one render per combination of an ad's versions (derived data, made
once, deleted with nothing else), its audio in the project's file storage.

A render's life is a run's: claimed by one task at a time with a token (``claims``) and a
lease (``lease_expires_at``, the database's clock), written only while the token is the
latest, and sent again by the recovery sweep when its task was lost or its lease ran out
(``renders.recover``)."""

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


class RenderPreset(models.TextChoices):
    """The loudness a render is mastered to (``audio.presets`` has the figures)."""

    STREAMING = "streaming", "Streaming (-16 LUFS, -1 dBTP)"
    BROADCAST = "broadcast", "Broadcast, EBU R 128 (-23 LUFS, -1 dBTP)"
    ATSC = "atsc", "ATSC A/85 (-24 LKFS, -2 dBTP)"


# Each file a render stores, by its format (``renders.files``): the field naming it.
FILE_FIELDS = {
    "ogg": "audio",
    "wav": "wav",
    "mp3": "mp3",
    "voices.wav": "voices_stem",
    "music.wav": "music_stem",
    "sfx.wav": "sfx_stem",
}


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
    # Part of what a render is: the same versions at another preset are another render.
    preset = models.CharField(
        max_length=10, choices=RenderPreset.choices, default=RenderPreset.STREAMING
    )
    status = models.CharField(max_length=10, choices=RenderStatus.choices, default="queued")
    # Measured from the audio made: each part's start and end, joins, warnings.
    timeline = models.JSONField(default=dict, blank=True)
    # Named only once whole in storage (renders.files): the row is done after its files.
    audio = models.FileField(upload_to="renders/", blank=True, help_text="Ogg/Opus.")
    wav = models.FileField(upload_to="renders/", blank=True, help_text="Broadcast WAV.")
    mp3 = models.FileField(upload_to="renders/", blank=True)
    # A stem per kind rendered (float WAV, before the limiter); none for a kind left out.
    voices_stem = models.FileField(upload_to="renders/", blank=True)
    music_stem = models.FileField(upload_to="renders/", blank=True)
    sfx_stem = models.FileField(upload_to="renders/", blank=True)
    seconds = models.FloatField(null=True, blank=True)
    # None for a silent mix: BS.1770 gives it -inf, which JSON cannot carry.
    loudness_lufs = models.FloatField(null=True, blank=True)
    true_peak_dbtp = models.FloatField(null=True, blank=True)
    render_ms = models.PositiveIntegerField(null=True, blank=True)
    # What the cast voices' providers billed for this render's lines (the cache's cost
    # nothing; the guide voice's nothing), in characters and in dollars at the speech
    # price table (speech.pricing).
    speech_characters = models.PositiveIntegerField(default=0)
    speech_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The latest claim's token: each claim by a task adds one, and a task writes the row
    # (or names files in it) only while its token is still the latest.
    claims = models.PositiveIntegerField(default=0)
    # Times the sweep took it back from a task whose lease ran out (its worker died),
    # since it was last asked for; past RENDER_MAX_RECLAIMS it fails instead.
    reclaims = models.PositiveSmallIntegerField(default=0)
    # While rendering: past this (the database's clock), its worker is taken for dead.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When its task was last sent: a queued render not sent for a while lost its message.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # first claimed by a task
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # The same combination is never rendered twice at a preset, a missing kind included.
            models.UniqueConstraint(
                fields=["ad", "combination", "preset"], name="render_once_per_versions_preset"
            ),
            models.CheckConstraint(
                condition=Q(preset__in=RenderPreset.values), name="render_preset_valid"
            ),
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
            # Done means its files are whole in storage and named here: the mix in each
            # format, and a stem for each kind it has.
            models.CheckConstraint(
                condition=~Q(status=RenderStatus.DONE)
                | (
                    ~Q(audio="")
                    & ~Q(wav="")
                    & ~Q(mp3="")
                    & (Q(voices__isnull=True) | ~Q(voices_stem=""))
                    & (Q(music__isnull=True) | ~Q(music_stem=""))
                    & (Q(sfx__isnull=True) | ~Q(sfx_stem=""))
                ),
                name="render_done_has_audio",
            ),
            # A failure always says why.
            models.CheckConstraint(
                condition=~Q(status=RenderStatus.FAILED) | ~Q(error=""),
                name="render_failed_has_error",
            ),
            # A render being made has a lease the sweep can judge.
            models.CheckConstraint(
                condition=~Q(status=RenderStatus.RENDERING) | Q(lease_expires_at__isnull=False),
                name="render_rendering_has_lease",
            ),
            # Only numbers JSON can carry: NaN and infinities fall outside every range.
            models.CheckConstraint(
                condition=Q(loudness_lufs__isnull=True)
                | Q(loudness_lufs__gte=-200, loudness_lufs__lte=20),
                name="render_loudness_finite",
            ),
            models.CheckConstraint(
                condition=Q(seconds__isnull=True) | Q(seconds__gte=0, seconds__lte=86400),
                name="render_seconds_finite",
            ),
            models.CheckConstraint(
                condition=Q(true_peak_dbtp__isnull=True)
                | Q(true_peak_dbtp__gte=-200, true_peak_dbtp__lte=20),
                name="render_true_peak_finite",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.ad} scratch track ({self.versions_label()})"

    def save(self, *args, **kwargs) -> None:
        self.combination = combination_of(self.voices_id, self.music_id, self.sfx_id)
        super().save(*args, **kwargs)

    def file_names(self) -> dict[str, str]:
        """The files the row names, by format."""
        named = {fmt: getattr(self, field).name for fmt, field in FILE_FIELDS.items()}
        return {fmt: name for fmt, name in named.items() if name}

    def versions_label(self) -> str:
        parts = [
            f"{kind} v{draft.version}" if draft else f"no {kind}"
            for kind, draft in (("voices", self.voices), ("music", self.music), ("sfx", self.sfx))
        ]
        return ", ".join(parts)
