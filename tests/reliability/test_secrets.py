"""A provider API key never shows up in logs, errors, the admin, the API or the database."""

from __future__ import annotations

import io
import logging

import pytest
from django.db import connection
from django.utils.module_loading import import_string
from rest_framework.test import APIClient

from accounts.services import token_create
from adstudio.log_context import LogContextFilter
from conversations.models import Run
from conversations.run_request import RunRequest
from conversations.services import brief_send
from testbed.fake_openai import error_turn, turn

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
        ok = brief_send(request=RunRequest(ad=make_ad(language="en")))
        failed = brief_send(request=RunRequest(ad=make_ad(language="en", title="second")))
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
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
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


def test_the_key_is_in_no_span(tracing_on, fake_openai, settings, make_ad, monkeypatch):
    """Traced, with every request header asked for as an operator might ask: the key's
    header (Authorization, or Anthropic's x-api-key) is redacted, and no span carries the
    key, not even the error of a provider that echoes it."""
    from testbed.fake_anthropic import FakeAnthropicServer, claude_turn

    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST", ".*")
    anthropic = FakeAnthropicServer(api_key=SENTINEL).start()
    settings.ADSTUDIO_PROVIDERS = {
        **fake_openai.provider_settings(api_key=SENTINEL),
        **anthropic.provider_settings(),
    }
    settings.ADSTUDIO_PROVIDER_FALLBACKS = []
    settings.ADSTUDIO_PROVIDER_RETRY = {**settings.ADSTUDIO_PROVIDER_RETRY, "base_delay": 0.001}
    fake_openai.script(
        turn("Hello"),
        error_turn(401, {"error": {"message": f"Incorrect API key provided: {SENTINEL}"}}),
    )
    anthropic.script(claude_turn("Hello from Claude"))
    traced = tracing_on()
    try:
        runs = [
            brief_send(request=RunRequest(ad=make_ad(language="en"))),
            brief_send(request=RunRequest(ad=make_ad(language="en", title="second"))),
            brief_send(
                request=RunRequest(ad=make_ad(language="en", title="third"), provider="anthropic")
            ),
        ]
    finally:
        anthropic.stop()

    assert [Run.objects.get(pk=r.pk).status for r in runs] == ["succeeded", "failed", "succeeded"]
    assert SENTINEL in " ".join(anthropic.request_headers[0].values())  # really sent
    spans = traced.spans()
    http = [s for s in spans if s.attributes.get("http.request.method") == "POST"]
    assert len(http) == 3
    headers = [{k: v for k, v in s.attributes.items() if "header" in k} for s in http]
    keys = [v for h in headers for k, v in h.items() if k.endswith(("authorization", "api_key"))]
    assert keys == [("[REDACTED]",)] * 3
    assert all("http.request.header.content_type" in h for h in headers)  # asked, recorded
    failed = [s for s in spans if s.name.startswith("chat ") and s.status == "ERROR"]
    assert [s.attributes["error.type"] for s in failed] == ["authentication"]
    for span in spans:
        assert not any(SENTINEL in text for text in span.texts()), span.name
