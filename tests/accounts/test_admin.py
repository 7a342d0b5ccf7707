"""API tokens in the admin: prefix, owner and times shown, never the token or its digest;
revoked by an action with the permission to; never made, edited or deleted there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from accounts.models import ApiToken
from accounts.services import token_create

pytestmark = pytest.mark.django_db

LIST = "admin:accounts_apitoken_changelist"


def test_staff_see_the_prefix_and_times_never_the_token(client, staff_user, user):
    row, token = token_create(user=user, name="laptop")
    client.force_login(staff_user)

    listing = client.get(reverse(LIST)).content.decode()
    page = client.get(reverse("admin:accounts_apitoken_change", args=[row.pk])).content.decode()

    for shown in (listing, page):
        assert f"{row.prefix}…" in shown and "laptop" in shown and "alice" in shown
        assert token not in shown and row.digest not in shown
    assert "Last used" in listing and "Expires" in listing
    assert client.get(reverse("admin:accounts_apitoken_add")).status_code == 403


def test_being_staff_is_not_enough(client, django_user_model, user):
    token_create(user=user)
    staff = django_user_model.objects.create_user("sam", password="pw", is_staff=True)
    client.force_login(staff)

    assert client.get(reverse(LIST)).status_code == 403


def test_the_revoke_action_needs_the_change_permission(client, django_user_model, user):
    row, _ = token_create(user=user)
    viewer = django_user_model.objects.create_user("vic", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_apitoken"))
    client.force_login(viewer)
    action = {"action": "revoke", "_selected_action": [str(row.pk)]}

    client.post(reverse(LIST), action)
    assert ApiToken.objects.get(pk=row.pk).revoked_at is None

    viewer.user_permissions.add(Permission.objects.get(codename="change_apitoken"))
    done = client.post(reverse(LIST), action, follow=True)
    assert ApiToken.objects.get(pk=row.pk).revoked_at is not None
    assert "1 token(s) revoked." in done.content.decode()
