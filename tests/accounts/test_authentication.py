"""Token authentication: a token's digest and its user read by one statement; expired,
revoked and unknown tokens refused with a message saying which; the token stored nowhere."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.db.models.functions import Now
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.authentication import TokenAuthentication
from accounts.models import PREFIX_LENGTH, TOKEN_MARK, ApiToken
from accounts.services import token_create, token_digest, token_revoke

pytestmark = pytest.mark.django_db


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def last_used(token: ApiToken):
    return ApiToken.objects.values_list("last_used_at", flat=True).get(pk=token.pk)


def test_a_valid_token_authenticates_its_user_in_one_query(user, ad):
    _, token = token_create(user=user)

    with CaptureQueriesContext(connection) as queries:
        response = with_token(token).get("/api/ads/")

    assert response.status_code == 200
    assert [a["id"] for a in response.json()["results"]] == [str(ad.pk)]
    token_reads = [q["sql"] for q in queries if ApiToken._meta.db_table in q["sql"]]
    assert len(token_reads) == 1, token_reads


def test_authentication_is_one_statement_whether_or_not_it_writes_the_last_use(
    user, rf, django_assert_num_queries
):
    row, token = token_create(user=user)
    request = rf.get("/api/ads/", HTTP_AUTHORIZATION=f"Token {token}")
    assert last_used(row) is None

    with django_assert_num_queries(1):  # first use: the read writes the last use too
        TokenAuthentication().authenticate(request)
    first = last_used(row)
    with django_assert_num_queries(1):  # within the minute: nothing written
        TokenAuthentication().authenticate(request)

    assert first is not None and last_used(row) == first
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=Now() - timedelta(seconds=61))
    stale = last_used(row)
    TokenAuthentication().authenticate(request)
    assert last_used(row) > stale  # over a minute old: written again


def test_the_request_carries_the_token_row_without_its_digest(user, rf):
    row, token = token_create(user=user, name="laptop")
    request = rf.get("/api/ads/", HTTP_AUTHORIZATION=f"Token {token}")

    authenticated_user, auth = TokenAuthentication().authenticate(request)

    assert authenticated_user == user
    assert (auth.pk, auth.user_id, auth.prefix) == (row.pk, user.pk, token[:PREFIX_LENGTH])
    assert (auth.created_at, auth.expires_at) == (row.created_at, row.expires_at)
    assert auth.digest == ""


def test_only_a_digest_and_a_short_prefix_are_stored(user):
    row, token = token_create(user=user)

    stored = ApiToken.objects.filter(pk=row.pk).values().get()
    assert token.startswith(TOKEN_MARK) and len(token) == 44
    assert stored["digest"] == token_digest(token) != token
    assert stored["prefix"] == token[:PREFIX_LENGTH] and len(token) - PREFIX_LENGTH >= 32
    assert not any(token in str(value) for value in stored.values())
    with connection.cursor() as cursor:  # nowhere in the table, in any column
        cursor.execute(
            f"SELECT count(*) FROM {ApiToken._meta.db_table} t WHERE t::text LIKE %s",
            [f"%{token}%"],
        )
        assert cursor.fetchone() == (0,)


def test_a_token_expires_after_the_ttl(user, settings):
    settings.ADSTUDIO_TOKEN_TTL = 3600
    row, _ = token_create(user=user)
    assert row.expires_at - row.created_at == timedelta(hours=1)


def test_an_unknown_token_is_401_with_drfs_message(user):
    token_create(user=user)

    response = with_token("0" * 40).get("/api/ads/")

    assert response.status_code == 401
    assert response.json()["error"] == {
        "code": "authentication_failed",
        "message": "Invalid token.",
    }
    assert response["WWW-Authenticate"] == "Token"


def test_an_expired_token_is_401_saying_so(user):
    row, token = token_create(user=user)
    ApiToken.objects.filter(pk=row.pk).update(
        created_at=Now() - timedelta(days=2), expires_at=Now() - timedelta(seconds=1)
    )
    expired_at = ApiToken.objects.get(pk=row.pk).expires_at

    response = with_token(token).get("/api/ads/")

    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "token_expired"
    assert error["message"].startswith(
        f"Token expired at {expired_at.isoformat(timespec='seconds')}: make a new one"
    )
    assert last_used(row) is None  # a refused token is not "used"


def test_a_revoked_token_is_401_saying_so(user):
    row, token = token_create(user=user)
    assert with_token(token).get("/api/ads/").status_code == 200
    token_revoke(token=row)

    response = with_token(token).get("/api/ads/")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "token_revoked"


def test_an_inactive_users_token_is_401(user):
    _, token = token_create(user=user)
    user.is_active = False
    user.save(update_fields=["is_active"])

    response = with_token(token).get("/api/ads/")

    assert response.status_code == 401
    assert response.json()["error"]["message"] == "User inactive or deleted."


@pytest.mark.parametrize("read", ["_read", "_read_with_orm"])
def test_the_embedded_defaults_read_finds_what_postgresqls_does(user, read):
    """SQLite (the embedded default) reads with the ORM: the same answers."""
    live, live_token = token_create(user=user)
    old, old_token = token_create(user=user)
    ApiToken.objects.filter(pk=old.pk).update(
        created_at=Now() - timedelta(days=2), expires_at=Now() - timedelta(days=1)
    )
    authentication = TokenAuthentication()

    found_user, found, expired = getattr(authentication, read)(token_digest(live_token))
    _, found_old, old_expired = getattr(authentication, read)(token_digest(old_token))

    assert (found_user, found.pk, expired) == (user, live.pk, False)
    assert (found_old.pk, old_expired) == (old.pk, True)
    assert last_used(live) is not None and last_used(old) is None


def test_the_token_is_never_logged(user, caplog):
    _, token = token_create(user=user)
    caplog.set_level(logging.DEBUG)

    with_token(token).get("/api/ads/")
    with_token(token + "x").get("/api/ads/")

    assert caplog.records
    assert not [r for r in caplog.records if token in r.getMessage() or token in str(r.args)]


@pytest.mark.parametrize(
    ("change", "constraint"),
    [
        ({"digest": "ast_" + "a" * 60}, "api_token_digest_is_sha256"),
        ({"digest": "A" * 64}, "api_token_digest_is_sha256"),
        ({"expires_at": F("created_at")}, "api_token_expires_after_creation"),
        (
            {"revoked_at": F("created_at") - timedelta(seconds=1)},
            "api_token_revoked_after_creation",
        ),
    ],
)
def test_the_database_refuses_a_token_against_the_rules(user, change, constraint):
    row, _ = token_create(user=user)

    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        ApiToken.objects.filter(pk=row.pk).update(**change)


def test_one_row_per_digest(user, other_user):
    row, _ = token_create(user=user)

    with pytest.raises(IntegrityError, match="api_token_unique_digest"), transaction.atomic():
        ApiToken.objects.create(
            user=other_user, prefix="x", digest=row.digest, expires_at=row.expires_at
        )
