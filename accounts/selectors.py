"""Reads of API tokens: a person's live tokens."""

from __future__ import annotations

from django.db.models import QuerySet
from django.db.models.functions import Now

from accounts.models import ApiToken


def tokens_live(*, user) -> QuerySet[ApiToken]:
    """``user``'s tokens that still authenticate: neither revoked nor expired (by the
    database's clock), newest first."""
    return ApiToken.objects.filter(user_id=user.pk, revoked_at=None, expires_at__gt=Now())
