"""Token authentication for the API (``Authorization: Token <token>``): the token's
digest looked up with its user in one statement, expired and revoked tokens refused with
a message saying so."""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.services import token_digest
from adstudio.db.sql import columns, from_row
from adstudio.log_context import bind

# How stale ``last_used_at`` may be before a request writes it again: without this,
# every request would be a write.
LAST_USED_PRECISION = timedelta(seconds=60)


class TokenExpired(exceptions.AuthenticationFailed):
    default_code = "token_expired"


class TokenRevoked(exceptions.AuthenticationFailed):
    default_code = "token_revoked"


@cache
def _user_by_digest_sql() -> str:
    """PostgreSQL: the token and its user in one statement, which also writes the token's
    ``last_used_at`` when it is older than ``LAST_USED_PRECISION`` (a data-modifying
    ``WITH``, run once whatever the outer query reads). Every time is the database's."""
    quote = connection.ops.quote_name
    users, user_pk = get_user_model()._meta.db_table, get_user_model()._meta.pk.column
    tokens = quote(ApiToken._meta.db_table)
    column = {f.name: quote(f.column) for f in ApiToken._meta.concrete_fields}
    seconds = int(LAST_USED_PRECISION.total_seconds())
    return (
        f"WITH token AS ("
        f"SELECT {column['id']} AS id, {column['user']} AS user_id, {column['prefix']} AS prefix,"
        f" {column['created_at']} AS created_at, {column['expires_at']} AS expires_at,"
        f" {column['revoked_at']} AS revoked_at, {column['expires_at']} <= now() AS expired"
        f" FROM {tokens} WHERE {column['digest']} = %s"
        f"), touched AS ("
        f"UPDATE {tokens} SET {column['last_used_at']} = now()"
        f" WHERE {column['id']} = (SELECT id FROM token)"
        f" AND {column['revoked_at']} IS NULL AND {column['expires_at']} > now()"
        f" AND ({column['last_used_at']} IS NULL"
        f" OR {column['last_used_at']} < now() - interval '{seconds} seconds')"
        f") SELECT {columns(get_user_model(), 'u')}, token.id, token.prefix,"
        f" token.created_at, token.expires_at, token.revoked_at, token.expired"
        f" FROM token JOIN {quote(users)} u ON u.{quote(user_pk)} = token.user_id"
    )


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``TokenAuthentication`` (its header, keyword ``Token`` and messages) over
    ``accounts.ApiToken``: ``request.auth`` is the token's row, without its digest.

    Every API request authenticates, so on PostgreSQL it costs one statement, read back
    from its row with ``from_row``: compiling an ORM query, or resolving a raw query's
    columns, cost more than running it (docs/BENCHMARKS.md).
    The token itself is never logged, stored or put in an error."""

    def authenticate_credentials(self, key: str):
        digest = token_digest(key)
        if connection.vendor == "postgresql":
            user, token, expired = self._read(digest)
        else:  # the embedded default (SQLite): two statements are fine there
            user, token, expired = self._read_with_orm(digest)
        if token.revoked_at is not None:
            raise TokenRevoked(_("Token revoked: make a new one (docs/api.md, Authentication)."))
        if expired:
            raise TokenExpired(
                _("Token expired at %(when)s: make a new one (docs/api.md, Authentication).")
                % {"when": token.expires_at.isoformat(timespec="seconds")}
            )
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        bind(user_id=user.pk)  # on the request's log lines from here on
        return user, token

    def _read(self, digest: str):
        with connection.cursor() as cursor:
            cursor.execute(_user_by_digest_sql(), [digest])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user, after = from_row(get_user_model(), row)
        token_id, prefix, created_at, expires_at, revoked_at, expired = row[after:]
        token = ApiToken(
            id=token_id,
            user=user,
            prefix=prefix,
            created_at=created_at,
            expires_at=expires_at,
            revoked_at=revoked_at,
        )
        return user, token, expired

    def _read_with_orm(self, digest: str):
        try:
            token = ApiToken.objects.select_related("user").get(digest=digest)
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        now = timezone.now()
        expired = token.expires_at <= now
        stale = token.last_used_at is None or token.last_used_at < now - LAST_USED_PRECISION
        if stale and not expired and token.revoked_at is None:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=Now())
        return token.user, token, expired
