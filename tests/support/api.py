"""An API client as a web client is one: authenticated by the user's token."""

from __future__ import annotations

from rest_framework.test import APIClient

from accounts.services import token_create


def api_for(user) -> APIClient:
    client = APIClient()
    _, token = token_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client
