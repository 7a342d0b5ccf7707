"""The voice catalogue: every voice the creative director may cast, from any TTS provider."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Upper


class Gender(models.TextChoices):
    MALE = "male", "Male"
    FEMALE = "female", "Female"
    NEUTRAL = "neutral", "Neutral"


# The rows search may return; its partial indexes cover exactly these.
SEARCHABLE = Q(approved=True, active=True)


class Voice(models.Model):
    provider = models.CharField(max_length=32, help_text="TTS provider, e.g. elevenlabs.")
    provider_voice_id = models.CharField(max_length=128)
    name = models.CharField(max_length=200)
    language = models.CharField(
        max_length=8, help_text="Canonical language code (ISO 639-1), e.g. th, pt, zh."
    )
    locale = models.CharField(
        max_length=16, blank=True, help_text="Regional variant when known, e.g. pt-BR, en-GB."
    )
    accent = models.CharField(max_length=64, blank=True)
    gender = models.CharField(max_length=8, choices=Gender.choices)
    age = models.CharField(max_length=32, blank=True)
    style = models.CharField(max_length=64, blank=True)
    use_case = models.CharField(max_length=64, blank=True)
    description = models.TextField(blank=True)
    preview_url = models.URLField(max_length=500, blank=True)
    approved = models.BooleanField(
        default=False, help_text="Only approved, active voices are offered to the model."
    )
    active = models.BooleanField(default=True)
    metadata = models.JSONField(default=dict, blank=True, help_text="The provider's raw record.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["language", "name", "id"]
        constraints = [
            # Imports upsert on this key: one row per voice of a provider.
            models.UniqueConstraint(
                fields=["provider", "provider_voice_id"], name="voice_unique_provider_voice_id"
            ),
            # Backs the Gender enum for rows written outside the ORM (bulk SQL, imports).
            models.CheckConstraint(
                condition=Q(gender__in=Gender.values), name="voice_gender_valid"
            ),
            # A voice without a language can never be found by search.
            models.CheckConstraint(condition=~Q(language=""), name="voice_language_not_empty"),
        ]
        # Each serves one filter of voices.selectors.voice_queryset; search reads only
        # approved, active rows, and (name, id) order lets "first 10 by name" stop after
        # 10 rows. Style words use a full-text index that migration 0002 creates on
        # PostgreSQL only; facet counts come from a table that migration 0003's triggers
        # keep there. docs/voices.md has the query plans these were chosen for.
        indexes = [
            models.Index(
                fields=["language", "name", "id"],
                condition=SEARCHABLE,
                name="voice_search_lang_name",
            ),
            models.Index(
                fields=["language", "gender", "name", "id"],
                condition=SEARCHABLE,
                name="voice_search_lang_gender",
            ),
            # accent= matches accent or locale case-insensitively (iexact is UPPER() = UPPER()),
            # per gender in (name, id) order, so the first 10 of each are its first entries
            # (names go with genders and accents: one order for all would read thousands of
            # others first). Not partial: PostgreSQL only keeps planner statistics for the
            # expressions of full indexes, and without them it misjudges how many match.
            models.Index(
                F("language"),
                Upper("accent"),
                F("gender"),
                F("name"),
                F("id"),
                name="voice_search_accent",
            ),
            models.Index(
                F("language"),
                Upper("locale"),
                F("gender"),
                F("name"),
                F("id"),
                name="voice_search_locale",
            ),
            # style= ranks voices whose style or use case is the phrase asked for first: these
            # give them in (name, id) order, so the first 10 are the first index entries.
            # Partial, so migration 0003 adds statistics on their expressions.
            models.Index(
                F("language"),
                Upper("style"),
                F("name"),
                F("id"),
                condition=SEARCHABLE,
                name="voice_search_style",
            ),
            models.Index(
                F("language"),
                Upper("use_case"),
                F("name"),
                F("id"),
                condition=SEARCHABLE,
                name="voice_search_use_case",
            ),
            models.Index(fields=["approved", "active"], name="voice_approved_active"),
            # max(updated_at) is the catalogue version that keys the search facet caches.
            models.Index(fields=["updated_at"], name="voice_updated_at"),
        ]
        # Approving offers a voice to the model, unapproving takes it away from every
        # workspace's director: the catalogue managers' decision, not a reviewer's.
        permissions = [("approve_voice", "Can approve or unapprove a voice for the model")]

    def __str__(self) -> str:
        return f"{self.name} ({self.language}, {self.gender}, {self.provider})"


APPROVE_PERMISSION = "voices.approve_voice"
