"""API tokens: only a SHA-256 digest of each and a short prefix to recognise it by are
stored; the token itself is shown once, to the person it is made for. Each expires, and
may be revoked before then (the row stays, with when)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Now

# New tokens start with this mark: never a hexadecimal digest, so a token stored in the
# digest column by mistake is refused by ``api_token_digest_is_sha256``.
TOKEN_MARK = "ast_"
# Characters of a token kept for display: the mark and 8 random characters (48 of its
# 240 random bits), enough to tell a person's tokens apart, far too few to guess the rest.
PREFIX_LENGTH = 12


class ApiToken(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, help_text="What the token is for.")
    prefix = models.CharField(
        max_length=PREFIX_LENGTH, help_text="The token's first characters: not secret."
    )
    digest = models.CharField(max_length=64, help_text="SHA-256 of the token, in hex.")
    created_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(
        null=True, blank=True, help_text="To the minute: written at most once a minute."
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "-created_at"], name="api_token_by_user")]
        constraints = [
            # Each request finds its token by the digest: one row per token.
            models.UniqueConstraint(fields=["digest"], name="api_token_unique_digest"),
            # Only a digest is stored, never a token (a token is never 64 hex digits).
            models.CheckConstraint(
                condition=Q(digest__regex=r"^[0-9a-f]{64}$"), name="api_token_digest_is_sha256"
            ),
            # Every token expires.
            models.CheckConstraint(
                condition=Q(expires_at__gt=F("created_at")),
                name="api_token_expires_after_creation",
            ),
            models.CheckConstraint(
                condition=Q(revoked_at__isnull=True) | Q(revoked_at__gte=F("created_at")),
                name="api_token_revoked_after_creation",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"
