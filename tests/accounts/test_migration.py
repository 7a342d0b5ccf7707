"""DRF's plain tokens hashed into API tokens by ``accounts.0002``: a client's token keeps
working until it expires, and its plain key is gone from the database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.services import token_digest
from tests.support.migrations import migrate_to, migrate_to_latest

KEY = "0123456789abcdef0123456789abcdef01234567"  # a DRF key: 40 hex digits


@pytest.mark.django_db(transaction=True)
def test_drf_tokens_are_hashed_and_their_plain_keys_deleted(user, settings):
    settings.ADSTUDIO_TOKEN_TTL = 86400
    migrate_to([("accounts", "0001_api_tokens")])
    try:
        with connection.cursor() as cursor:  # the table as rest_framework.authtoken made it
            cursor.execute(
                "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
                "created timestamptz NOT NULL, user_id integer NOT NULL UNIQUE "
                "REFERENCES auth_user (id))"
            )
            cursor.execute(
                "INSERT INTO authtoken_token VALUES (%s, now() - interval '400 days', %s)",
                [KEY, user.pk],
            )
        migrate_to_latest()
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM authtoken_token")
            left = cursor.fetchone()[0]
            cursor.execute("SELECT now()")
            migrated_at = cursor.fetchone()[0]
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS authtoken_token")
        migrate_to_latest()

    token = ApiToken.objects.get()
    assert left == 0
    assert (token.user, token.prefix, token.digest) == (user, KEY[:8], token_digest(KEY))
    assert migrated_at - token.created_at >= timedelta(days=400)  # when DRF made it
    assert timedelta(hours=23) < token.expires_at - migrated_at <= timedelta(days=1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {KEY}")
    assert client.get("/api/ads/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_database_without_drf_tokens_migrates_to_none():
    migrate_to([("accounts", "0001_api_tokens")])
    migrate_to_latest()
    assert not ApiToken.objects.exists()
