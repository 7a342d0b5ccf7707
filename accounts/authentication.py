"""Token authentication for the API, as DRF's, for less CPU per request."""

from __future__ import annotations

from functools import cache

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from adstudio.log_context import bind


@cache
def _user_by_token_sql() -> str:
    quote = connection.ops.quote_name
    users, user_pk = get_user_model()._meta.db_table, get_user_model()._meta.pk.column
    column = {
        name: quote(Token._meta.get_field(name).column) for name in ("key", "user", "created")
    }
    return (
        f"SELECT u.*, t.{column['created']} AS token_created FROM {quote(users)} u "
        f"JOIN {quote(Token._meta.db_table)} t ON t.{column['user']} = u.{quote(user_pk)} "
        f"WHERE t.{column['key']} = %s"
    )


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``TokenAuthentication`` (``Authorization: Token <key>``, the keys of
    ``rest_framework.authtoken``) with the token's user read by one raw query.

    Every API request authenticates, and DRF's ``select_related`` lookup spends most of
    its time compiling SQL, not running it: 1.2 ms against 0.5 ms for the same join as a
    raw query (``docs/BENCHMARKS.md``). The checks and errors are DRF's."""

    def authenticate_credentials(self, key: str):
        users = list(get_user_model().objects.raw(_user_by_token_sql(), [key]))
        if not users:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user = users[0]
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        bind(user_id=user.pk)  # on the request's log lines from here on
        return user, Token(key=key, user=user, created=user.token_created)
