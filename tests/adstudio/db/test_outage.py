"""A request whose database connection is killed while it runs (the backend terminated,
as a database restart or an operator does): a read is answered from a fresh connection,
a write is a 503 with Retry-After, and neither is a 500."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.authentication import TokenAuthentication
from accounts.services import token_create
from drafts.models import Ad

BRIEF = {"clientDescription": "Spotify Premium family plan", "language": "th"}


@pytest.fixture
def killed_once(monkeypatch):
    """Token authentication's first query finds its backend terminated (AdminShutdown)."""
    real = TokenAuthentication.authenticate_credentials
    kills = []

    def authenticate(self, key):
        if not kills:
            kills.append(connection.connection.info.backend_pid)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return real(self, key)

    monkeypatch.setattr(TokenAuthentication, "authenticate_credentials", authenticate)
    return kills


@pytest.fixture
def api(user):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return client


@pytest.mark.django_db(transaction=True)
def test_a_read_whose_connection_is_killed_is_answered_from_a_fresh_one(api, make_ad, killed_once):
    ad = make_ad()

    response = api.get("/api/ads/")

    assert killed_once, "the backend was not terminated"
    assert response.status_code == 200, response.content
    assert [item["id"] for item in response.json()["results"]] == [str(ad.pk)]


@pytest.mark.django_db(transaction=True)
def test_a_write_whose_connection_is_killed_is_a_503_and_writes_nothing(api, killed_once):
    response = api.post("/api/ads/", BRIEF, format="json")

    assert killed_once
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "2"
    assert response.json()["error"]["code"] == "database_unavailable"
    assert not Ad.objects.exists()
    assert api.post("/api/ads/", BRIEF, format="json").status_code == 201  # and then it works
