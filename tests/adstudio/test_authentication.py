"""Token authentication: DRF's behaviour, with the user read by one query."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from adstudio.authentication import TokenAuthentication

pytestmark = pytest.mark.django_db


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_valid_token_authenticates_its_user_in_one_query(user, ad):
    token = Token.objects.create(user=user)

    with CaptureQueriesContext(connection) as queries:
        response = with_token(token.key).get("/api/ads/")

    assert response.status_code == 200
    assert [a["id"] for a in response.json()["results"]] == [str(ad.pk)]
    token_reads = [q["sql"] for q in queries if Token._meta.db_table in q["sql"]]
    assert len(token_reads) == 1, token_reads


def test_an_unknown_token_is_401_with_drfs_message(user):
    Token.objects.create(user=user)

    response = with_token("0" * 40).get("/api/ads/")

    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid token."
    assert response["WWW-Authenticate"] == "Token"


def test_an_inactive_users_token_is_401(user):
    token = Token.objects.create(user=user)
    user.is_active = False
    user.save(update_fields=["is_active"])

    response = with_token(token.key).get("/api/ads/")

    assert response.status_code == 401
    assert response.json()["error"]["message"] == "User inactive or deleted."


def test_the_request_carries_the_users_token(user, rf):
    token = Token.objects.create(user=user)
    request = rf.get("/api/ads/", HTTP_AUTHORIZATION=f"Token {token.key}")

    authenticated_user, auth = TokenAuthentication().authenticate(request)

    assert authenticated_user == user
    assert (auth.key, auth.user_id, auth.created) == (token.key, user.pk, token.created)
