"""Writes of API tokens: made (the token returned once, only its digest kept) and
revoked."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Now

from accounts.models import PREFIX_LENGTH, TOKEN_MARK, ApiToken


def token_digest(token: str) -> str:
    """What is stored of a token: its SHA-256, in hex. A token carries 240 random bits
    (a migrated DRF key 160), so a fast hash is enough: nobody can search that space, and
    the digest is checked on every request, where a slow hash would cost each one."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, user, name: str = "", ttl: timedelta | None = None) -> tuple[ApiToken, str]:
    """A new token of ``user``'s, expiring after ``ttl`` (``ADSTUDIO_TOKEN_TTL`` by
    default) by the database's clock. Returns the row and the token: the only time the
    token exists outside its holder's hands, so the caller shows it once and keeps it
    nowhere (no log line, no row)."""
    token = TOKEN_MARK + secrets.token_urlsafe(30)
    ttl = ttl if ttl is not None else timedelta(seconds=settings.ADSTUDIO_TOKEN_TTL)
    row = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=token[:PREFIX_LENGTH],
        digest=token_digest(token),
        expires_at=Now() + ttl,
    )
    row.refresh_from_db(fields=["created_at", "expires_at"])
    return row, token


def token_revoke(*, token: ApiToken) -> bool:
    """Revoke ``token`` now (by the database's clock); its row stays, with when. False
    when it was revoked already (the first revocation's time is kept)."""
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=Now())
    token.refresh_from_db(fields=["revoked_at"])
    return bool(revoked)
