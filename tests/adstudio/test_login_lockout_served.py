"""Login lockouts through gunicorn as README deploys it (uvicorn's workers): the address
counted is the client's as the web server resolved it, believing ``X-Forwarded-For`` only
from a proxy in ``FORWARDED_ALLOW_IPS`` (gunicorn's default: 127.0.0.1 and ::1)."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings

from tests.support.browser import PASSWORD, make_staff
from tests.support.web import admin_login, client_from

pytestmark = pytest.mark.django_db(transaction=True)


def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(shared_stack):
    with client_from("127.0.0.1", headers={"X-Forwarded-For": "203.0.113.9"}) as proxy:
        assert admin_login(proxy, shared_stack.base, "nobody", "guess").status_code == 200

    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == ["203.0.113.9"]


def test_from_any_other_peer_the_header_is_ignored(shared_stack):
    with client_from("127.0.0.2", headers={"X-Forwarded-For": "203.0.113.10"}) as client:
        assert admin_login(client, shared_stack.base, "nobody", "guess").status_code == 200

    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == ["127.0.0.2"]


def test_the_right_password_after_the_limit_is_refused_and_signs_nobody_in(shared_stack):
    make_staff("served-staff")
    limit = settings.AXES_FAILURE_LIMIT

    with client_from("127.0.0.3") as client:
        answers = [
            admin_login(client, shared_stack.base, "served-staff", "wrong").status_code
            for _ in range(limit)
        ]
        last = admin_login(client, shared_stack.base, "served-staff", PASSWORD)

        assert answers == [200] * (limit - 1) + [429]
        assert last.status_code == 429
        assert int(last.headers["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
        assert "Too many failed logins" in last.text
        assert client.get(f"{shared_stack.base}/admin/").status_code == 302  # to the login
