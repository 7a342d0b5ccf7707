"""Property-based requests against every endpoint of the OpenAPI schema (schemathesis):
no input, valid or not, makes the API answer 5xx, a status its operation does not
document, or otherwise contradict its own schema."""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.services import token_create
from adstudio.wsgi import application
from drafts.services import draft_create
from tests.support.api import api_for
from tests.support.versions import version_of
from workspaces.services import workspace_personal

MAX_EXAMPLES = 8  # per operation; benchmarks/ runs the long version


@pytest.fixture(autouse=True)
def _requests_in_the_test_transaction(db):
    # Requests run inside the test's transaction, as with Django's test client: the
    # WSGI handler must not close the connection at the end of each request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(staff_user, make_ad, make_voice):
    ad = make_ad(owner=staff_user)
    make_voice(language="th")
    for kind in ("voices", "music", "sfx"):  # payloads checked against their shapes
        draft_create(ad=ad, version=version_of(kind))
    return token_create(user=staff_user)[1]


@pytest.fixture
def api_schema(settings):
    """Read when the test runs, not when it is collected: building the first examples of
    every operation takes seconds, which each test process paid at collection, to run
    them in one."""
    settings.ADSTUDIO_MAX_WAIT_SECONDS = 0.2  # ?wait= never holds an example up
    return schemathesis.openapi.from_wsgi("/api/schema/", application)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_operation_answers_within_its_schema(case, token):
    case.call_and_validate(
        headers={"Authorization": f"Token {token}"},
        checks=[
            not_a_server_error,
            response_schema_conformance,
            content_type_conformance,
            status_code_conformance,  # every status answered is one the operation documents
        ],
    )


def test_every_operation_documents_its_errors_in_the_one_shape(client):
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}

    chat = document["paths"]["/api/ads/{ad_id}/chat"]["post"]["responses"]
    ads = document["paths"]["/api/ads/"]["get"]["responses"]

    assert {"400", "401", "403", "404", "413", "415", "422", "429"} <= set(chat)
    assert all(chat[status]["content"] == error for status in ("400", "422", "429"))
    assert {"401", "403", "404"} <= set(ads) and "413" not in ads and "429" not in ads
    fields = document["components"]["schemas"]["Error"]["properties"]["error"]["properties"]
    assert set(fields) == {"code", "message", "fields"}


def test_a_drafts_payload_is_documented_as_the_designs_version_shapes(client):
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = document["components"]["schemas"]

    payload = schemas["DraftOutput"]["properties"]["payload"]
    assert payload["allOf"] == [{"$ref": "#/components/schemas/DraftPayload"}]
    assert schemas["DraftPayload"]["oneOf"] == [
        {"$ref": f"#/components/schemas/{name}"}
        for name in ("VoiceVersion", "MusicVersion", "SfxVersion")
    ]
    track = schemas["VoiceTrack"]
    assert track["required"] == [
        "id", "voiceId", "voiceName", "text", "playAfter", "overlap", "speed"
    ]  # fmt: skip
    assert set(schemas["SoundFxPrompt"]["required"]) == {
        "description", "placement", "duration", "playAfter", "overlap"
    }  # fmt: skip
    assert schemas["MusicVersion"]["required"] == ["musicPrompt", "musicProvider", "duration"]


def test_a_property_that_may_be_left_out_has_no_default_a_generator_makes_required(client):
    """openapi-typescript (``defaultNonNullable``) types a component's property with a
    ``default`` as always present; one a client may leave out says its default in words."""
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = document["components"]["schemas"]

    def defaults(node, where=""):
        if isinstance(node, list):
            return [found for item in node for found in defaults(item, where)]
        if not isinstance(node, dict):
            return []
        required = set(node.get("required", ()))
        found = [
            f"{where}.{name}"
            for name, field in (node.get("properties") or {}).items()
            if isinstance(field, dict) and "default" in field and name not in required
        ]
        return found + [f for key, value in node.items() for f in defaults(value, where)]

    assert [f for name, schema in schemas.items() for f in defaults(schema, name)] == []
    of = schemas["RenderRequestRequest"]["properties"]["of"]
    assert "of" not in schemas["RenderRequestRequest"].get("required", [])
    assert of["description"].endswith('Default: `"latest"`.')


@pytest.mark.django_db
def test_whitespace_alone_which_the_api_refuses_the_schema_refuses_too(client, user, make_ad):
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = document["components"]["schemas"]
    api = api_for(user)
    ad = make_ad()
    workspace = workspace_personal(user=user)
    brief = {"clientDescription": " \t ", "language": "th", "durationSeconds": 30}
    refused = [
        ("AdCreateRequest", "clientDescription", api.post, "/api/ads/", brief),
        ("BriefRequest", "clientDescription", api.put, f"/api/ads/{ad.pk}/", brief),
        ("ChatInputRequest", "message", api.post, f"/api/ads/{ad.pk}/chat", {"message": " "}),
        ("WorkspaceInputRequest", "name", api.post, "/api/workspaces/", {"name": "\n"}),
        (
            "MemberInputRequest",
            "username",
            api.post,
            f"/api/workspaces/{workspace.pk}/members/",
            {"username": " ", "role": "editor"},
        ),
    ]
    for component, field, send, url, body in refused:
        pattern = schemas[component]["properties"][field]["pattern"]

        answer = send(url, body, format="json")

        assert answer.status_code == 400 and field in answer.json()["error"]["fields"], url
        assert re.fullmatch(pattern, body[field]) is None, (component, field)
        assert re.fullmatch(pattern, " Spotify ") and not re.fullmatch(pattern, "a\x00b")
    allowed = api.post("/api/workspaces/", {"name": " Team "}, format="json")
    assert allowed.status_code == 201
