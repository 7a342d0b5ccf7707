"""Password logins refused after too many failures (django-axes, adstudio/login_lockout.py):
through the admin's login form, counted per user name and per address, ended by the
cool-off or by an operator's reset, and never in the way of the API's tokens."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client

from accounts.services import token_create
from tests.support.settings_module import settings_with, start_up_error

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"
PASSWORD = "right-password-123"
LIMIT = 3


@pytest.fixture(autouse=True)
def _limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)
    settings.AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
    settings.AXES_RESET_ON_SUCCESS = False


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("editor", password=PASSWORD, is_staff=True)


def log_in(username: str, password: str, *, address: str = "198.51.100.7", **headers):
    """A new browser posting the admin's login form from ``address``: its response and
    whether it ended with a session."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        LOGIN, {"username": username, "password": password}, headers=headers or None
    )
    return response, "_auth_user_id" in client.session


def test_wrong_passwords_up_to_the_limit_lock_out_even_the_right_one(staff):
    for _ in range(LIMIT - 1):
        response, signed_in = log_in("editor", "wrong")
        assert response.status_code == 200  # the form again, with its error
        assert not signed_in

    response, signed_in = log_in("editor", "wrong")
    assert response.status_code == 429
    assert response["Retry-After"] == str(15 * 60)
    assert "Too many failed logins" in response.content.decode()
    assert "Try again in 15 minutes" in response.content.decode()

    response, signed_in = log_in("editor", PASSWORD)
    assert response.status_code == 429
    assert not signed_in
    assert AccessAttempt.objects.get(username="editor").failures_since_start == LIMIT + 1


def test_an_address_guessing_at_many_users_is_locked_out_for_every_user(staff):
    for name in ("alice", "bob", "carol"):
        log_in(name, "guess", address="203.0.113.5")

    response, signed_in = log_in("editor", PASSWORD, address="203.0.113.5")
    assert response.status_code == 429
    assert not signed_in
    # The user is not locked out: from another address, the right password still works.
    response, signed_in = log_in("editor", PASSWORD, address="203.0.113.6")
    assert response.status_code == 302
    assert signed_in


def test_a_user_guessed_at_from_many_addresses_is_locked_out(staff):
    for n in range(LIMIT):
        log_in("editor", "wrong", address=f"192.0.2.{n + 1}")

    response, signed_in = log_in("editor", PASSWORD, address="192.0.2.200")
    assert response.status_code == 429
    assert not signed_in


def test_a_pair_only_lockout_leaves_the_user_and_the_address_alone(settings, staff):
    settings.AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
    for _ in range(LIMIT):
        log_in("editor", "wrong", address="192.0.2.1")

    assert log_in("editor", PASSWORD, address="192.0.2.1")[0].status_code == 429
    assert log_in("editor", PASSWORD, address="192.0.2.2")[1]


def test_the_address_counted_is_remote_addr_not_a_header_the_client_wrote(staff):
    for n in range(LIMIT):
        log_in("editor", "wrong", address="198.51.100.7", x_forwarded_for=f"10.9.9.{n}")

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("axes_reset_username", ["editor"]),
        ("axes_reset_ip", ["198.51.100.7"]),
        ("axes_reset_ip_username", ["198.51.100.7", "editor"]),
        ("axes_reset", []),
    ],
)
def test_an_operators_reset_unlocks_at_once(staff, command, args):
    for _ in range(LIMIT):
        log_in("editor", "wrong")
    assert log_in("editor", PASSWORD)[0].status_code == 429

    out = io.StringIO()
    call_command(command, *args, stdout=out)

    assert "attempts removed" in out.getvalue()
    response, signed_in = log_in("editor", PASSWORD)
    assert response.status_code == 302
    assert signed_in


def test_the_lockout_ends_after_the_cool_off(staff):
    for _ in range(LIMIT):
        log_in("editor", "wrong")
    assert log_in("editor", PASSWORD)[0].status_code == 429

    # The last failure, as if it were a cool-off and a second ago.
    last = AccessAttempt.objects.get().attempt_time
    AccessAttempt.objects.update(attempt_time=last - timedelta(minutes=15, seconds=1))

    assert log_in("editor", PASSWORD)[1]


def test_a_success_keeps_the_failures_by_default(staff):
    for _ in range(LIMIT - 1):
        log_in("editor", "wrong")
    assert log_in("editor", PASSWORD)[1]

    response, _ = log_in("editor", "wrong")

    assert response.status_code == 429  # the earlier failures still count


def test_a_success_clears_the_failures_when_set(settings, staff):
    settings.AXES_RESET_ON_SUCCESS = True
    for _ in range(LIMIT - 1):
        log_in("editor", "wrong")
    assert log_in("editor", PASSWORD)[1]

    for _ in range(LIMIT - 1):
        response, _ = log_in("editor", "wrong")
        assert response.status_code == 200

    assert not AccessAttempt.objects.filter(failures_since_start__gte=LIMIT).exists()


def test_api_tokens_work_from_a_locked_out_address(staff):
    _, token = token_create(user=staff)
    for name in ("alice", "bob", "carol"):
        log_in(name, "guess", address="203.0.113.5")
    assert log_in("editor", PASSWORD, address="203.0.113.5")[0].status_code == 429

    api = Client(REMOTE_ADDR="203.0.113.5")
    response = api.get("/api/ads/", headers={"authorization": f"Token {token}"})

    assert response.status_code == 200
    assert response.json()["count"] == 0


def test_staff_with_the_permission_see_the_attempts_in_the_admin(django_user_model, staff):
    for _ in range(2):
        log_in("editor", "wrong", address="203.0.113.44")
    root = django_user_model.objects.create_superuser("root", password=PASSWORD)
    client = Client()
    client.force_login(root)

    page = client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200
    assert "203.0.113.44" in page.content.decode()

    client.force_login(staff)  # staff without axes' permissions see nothing of it
    assert client.get("/admin/axes/accessattempt/").status_code == 403


def test_the_settings_come_from_the_environment():
    values = settings_with(
        {
            "ADSTUDIO_LOGIN_FAILURE_LIMIT": "8",
            "ADSTUDIO_LOGIN_COOLOFF_SECONDS": "120",
            "ADSTUDIO_LOGIN_LOCKOUT_BY": "ip_address, username+user_agent",
            "ADSTUDIO_LOGIN_RESET_ON_SUCCESS": "1",
        }
    )

    assert values["AXES_FAILURE_LIMIT"] == 8
    assert values["AXES_COOLOFF_TIME"] == timedelta(seconds=120)
    assert values["AXES_LOCKOUT_PARAMETERS"] == ["ip_address", ["username", "user_agent"]]
    assert values["AXES_RESET_ON_SUCCESS"] is True
    assert settings_with({})["AXES_LOCKOUT_PARAMETERS"] == ["username", "ip_address"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ADSTUDIO_LOGIN_LOCKOUT_BY": "username+ip"}, "ADSTUDIO_LOGIN_LOCKOUT_BY='username+ip'"),
        ({"ADSTUDIO_LOGIN_LOCKOUT_BY": "username,"}, "ADSTUDIO_LOGIN_LOCKOUT_BY="),
        ({"ADSTUDIO_LOGIN_LOCKOUT_BY": "username+username"}, "ADSTUDIO_LOGIN_LOCKOUT_BY="),
        ({"ADSTUDIO_LOGIN_FAILURE_LIMIT": "0"}, "ADSTUDIO_LOGIN_FAILURE_LIMIT=0 must be at least"),
        ({"ADSTUDIO_LOGIN_COOLOFF_SECONDS": "soon"}, "ADSTUDIO_LOGIN_COOLOFF_SECONDS='soon'"),
        ({"ADSTUDIO_LOGIN_RESET_ON_SUCCESS": "maybe"}, "ADSTUDIO_LOGIN_RESET_ON_SUCCESS='maybe'"),
    ],
)
def test_a_malformed_lockout_setting_is_a_start_up_error_naming_it(env, expected):
    assert expected in start_up_error(env)
