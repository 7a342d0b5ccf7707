"""A provider API key never shows up in logs, errors, the admin, the API or the database."""

from __future__ import annotations

import io
import logging

import pytest
from django.db import connection
from django.utils.module_loading import import_string
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from adstudio.log_context import LogContextFilter
from conversations.models import Run
from conversations.services import start_generation
from tests.fakes.server import error_turn, turn

pytestmark = pytest.mark.django_db(transaction=True)

SENTINEL = "sk-SENTINEL-0c7f3e9a1b2d4e6f8a"


def database_text() -> str:
    """Every text and JSON value of every table of the project, as one string."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            chunks.extend(str(row) for row in cursor.fetchall())
    return "\n".join(chunks)


def test_the_key_is_nowhere(fake_openai, settings, make_ad, staff_user, user):
    settings.ADSTUDIO_PROVIDERS = fake_openai.provider_settings(api_key=SENTINEL)
    settings.ADSTUDIO_PROVIDER_FALLBACKS = []
    settings.ADSTUDIO_PROVIDER_RETRY = {**settings.ADSTUDIO_PROVIDER_RETRY, "base_delay": 0.001}
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setLevel(logging.DEBUG)
    # As LOG_FORMAT=json writes it: every attribute of a record, with the bound ids.
    spec = dict(settings.LOGGING["formatters"]["json"])
    handler.setFormatter(import_string(spec.pop("()"))(**spec))
    handler.addFilter(LogContextFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.DEBUG)
    # The provider echoes the key back in its error, as some do for a bad key.
    fake_openai.script(
        turn("Hello"),
        error_turn(
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {SENTINEL}",
                    "type": "invalid_request_error",
                }
            },
        ),
    )
    try:
        ok = start_generation(ad=make_ad(language="en"))
        failed = start_generation(ad=make_ad(language="en", title="second"))
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)

    failed.refresh_from_db()
    assert failed.status == "failed" and failed.error_code == "authentication"
    assert "OPENAI_API_KEY" in failed.error_message
    # the key was really used on the wire
    assert fake_openai.request_headers[0]["authorization"] == f"Bearer {SENTINEL}"

    assert SENTINEL not in log.getvalue()
    assert '"logger": "openai' in log.getvalue()  # the SDK's own debug lines were there
    assert SENTINEL not in database_text()

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    for run in (ok, failed):
        assert SENTINEL not in api.get(f"/api/runs/{run.pk}").content.decode()
        assert SENTINEL not in api.get(f"/api/runs/{run.pk}/events").content.decode()
    admin = APIClient()
    admin.force_login(staff_user)
    for path in (
        f"/admin/conversations/run/{failed.pk}/change/",
        "/admin/conversations/run/",
        "/admin/conversations/conversation/",
        "/admin/conversations/run/stats/",
    ):
        page = admin.get(path)
        assert page.status_code == 200, path
        assert SENTINEL not in page.content.decode()
    assert Run.objects.count() == 2
