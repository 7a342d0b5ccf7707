"""A person's own tokens over the API: made from a signed-in session and shown once,
listed without the token, revoked one by one; nobody else's seen or touched."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db.models.functions import Now
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.services import token_create, token_digest, token_revoke

pytestmark = pytest.mark.django_db

TOKENS = "/api/auth/tokens/"


def with_token(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


CSRF = "k" * 32  # a CSRF secret of the right shape, sent as the cookie and the header


def signed_in(user) -> APIClient:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    client.cookies["csrftoken"] = CSRF
    return client


def test_a_signed_in_session_makes_a_token_shown_once(user, settings):
    settings.ADSTUDIO_TOKEN_TTL = 7 * 86400
    session = signed_in(user)

    made = session.post(TOKENS, {"name": "web client"}, HTTP_X_CSRFTOKEN=CSRF)

    assert made.status_code == 201 and made["Cache-Control"] == "no-store"
    body = made.json()
    token = body["token"]
    row = ApiToken.objects.get(pk=body["id"])
    assert (row.user, row.name, row.digest) == (user, "web client", token_digest(token))
    assert body["prefix"] == token[:12] == row.prefix
    assert row.expires_at - row.created_at == timedelta(days=7)
    listed = with_token(token).get(TOKENS).json()["results"]
    assert listed == [
        {
            "id": str(row.pk),
            "name": "web client",
            "prefix": row.prefix,
            "createdAt": body["createdAt"],
            "expiresAt": body["expiresAt"],
            "lastUsedAt": listed[0]["lastUsedAt"],
            "current": True,
        }
    ]
    assert listed[0]["lastUsedAt"] is not None  # this very request used it
    assert with_token(token).get(f"{TOKENS}{row.pk}/").json().get("token") is None


def test_a_session_post_without_its_csrf_token_makes_nothing(user):
    refused = signed_in(user).post(TOKENS, {"name": "forged"})

    assert refused.status_code == 403
    assert not ApiToken.objects.exists()


def test_a_token_cannot_make_another(user):
    row, token = token_create(user=user)

    refused = with_token(token).post(TOKENS, {"name": "longer-lived"}, format="json")

    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "session_required"
    assert list(ApiToken.objects.values_list("pk", flat=True)) == [row.pk]


def test_the_list_holds_the_callers_live_tokens_only(user, other_user):
    mine, token = token_create(user=user, name="laptop")
    other, _ = token_create(user=user, name="phone")
    revoked, _ = token_create(user=user, name="old laptop")
    token_revoke(token=revoked)
    expired, _ = token_create(user=user, name="last year")
    ApiToken.objects.filter(pk=expired.pk).update(
        created_at=Now() - timedelta(days=400), expires_at=Now() - timedelta(days=370)
    )
    token_create(user=other_user, name="bob's")

    listed = with_token(token).get(TOKENS).json()["results"]

    assert {t["name"]: t["current"] for t in listed} == {"laptop": True, "phone": False}
    assert [t["id"] for t in listed] == [str(other.pk), str(mine.pk)]  # newest first


def test_a_token_revoked_stops_working_and_stays_on_record(user):
    _, token = token_create(user=user, name="laptop")
    phone, phone_token = token_create(user=user, name="phone")

    revoked = with_token(token).delete(f"{TOKENS}{phone.pk}/")

    assert revoked.status_code == 204
    assert ApiToken.objects.get(pk=phone.pk).revoked_at is not None
    assert with_token(phone_token).get(TOKENS).json()["error"]["code"] == "token_revoked"
    assert with_token(token).get(TOKENS).status_code == 200
    assert with_token(token).delete(f"{TOKENS}{phone.pk}/").status_code == 404  # gone from view


def test_revoking_the_current_token_signs_out(user):
    row, token = token_create(user=user)

    assert with_token(token).delete(f"{TOKENS}{row.pk}/").status_code == 204
    assert with_token(token).get(TOKENS).status_code == 401


def test_nobody_sees_or_revokes_anothers_token(user, other_user, staff_user):
    bobs, bobs_token = token_create(user=other_user)
    _, alices = token_create(user=user)
    _, root = token_create(user=staff_user)  # a superuser: the admin is where they revoke

    for token in (alices, root):
        assert with_token(token).get(f"{TOKENS}{bobs.pk}/").status_code == 404
        assert with_token(token).delete(f"{TOKENS}{bobs.pk}/").status_code == 404
        assert [t["id"] for t in with_token(token).get(TOKENS).json()["results"]] != [str(bobs.pk)]

    assert ApiToken.objects.get(pk=bobs.pk).revoked_at is None
    assert with_token(bobs_token).get(TOKENS).status_code == 200


def test_a_name_over_100_characters_is_refused(user):
    session = signed_in(user)

    refused = session.post(TOKENS, {"name": "x" * 101}, HTTP_X_CSRFTOKEN=CSRF)

    assert refused.status_code == 400 and refused.json()["error"]["fields"]["name"]
    assert not ApiToken.objects.exists()


def test_the_command_prints_a_working_token_once(user, capsys, settings):
    settings.ADSTUDIO_TOKEN_TTL = 30 * 86400

    call_command("create_api_token", "alice", "--name", "ci", "--days", "2")

    out, err = capsys.readouterr()
    token = out.strip()
    row = ApiToken.objects.get(user=user)
    assert (row.name, row.digest) == ("ci", token_digest(token))
    assert row.expires_at - row.created_at == timedelta(days=2)
    assert token not in err and f"{row.prefix}…" in err
    assert with_token(token).get(TOKENS).status_code == 200


def test_the_command_names_what_is_wrong(user):
    with pytest.raises(CommandError, match="No user is called 'nobody'"):
        call_command("create_api_token", "nobody")
    with pytest.raises(CommandError, match="--days: 1 or more"):
        call_command("create_api_token", "alice", "--days", "0")
    assert not ApiToken.objects.exists()
