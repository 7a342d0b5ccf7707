"""The limits the API enforces are in its schema, so that a request a typed client builds
from the schema is not refused for its parameters, and one past them is."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Conversation, Run


@pytest.fixture
def document(client) -> dict:
    return client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def parameter(document: dict, path: str, method: str, name: str) -> dict:
    operation = document["paths"][path][method]
    return next(p["schema"] for p in operation["parameters"] if p["name"] == name)


@pytest.mark.parametrize(
    ("path", "method", "name", "schema"),
    [
        ("/api/ai/generate", "post", "wait", {"type": "number", "minimum": 0, "maximum": 60}),
        ("/api/ads/{ad_id}/chat", "post", "wait", {"minimum": 0, "maximum": 60}),
        ("/api/ads/{ad_id}/chat", "post", "Idempotency-Key", {"maxLength": 128}),
        ("/api/runs/{id}/events", "get", "wait", {"minimum": 0, "maximum": 60}),
        ("/api/runs/{id}/events", "get", "after", {"type": "integer", "minimum": 0}),
        ("/api/runs/{id}/events", "get", "format", {"enum": ["json"]}),
        ("/api/runs/{id}/events/stream", "get", "Last-Event-ID", {"type": "string"}),
        ("/api/ads/{ad_id}/ui-chat/{chat_id}/stream", "get", "Last-Event-ID", {"type": "string"}),
        (
            "/api/ads/{ad_id}/ui-chat/{chat_id}/stream",
            "get",
            "chat_id",
            {"type": "string", "minLength": 1, "pattern": "^[^/]+$"},
        ),
        ("/api/voices/", "get", "language", {"type": "string", "minLength": 1}),
    ],
)
def test_each_enforced_limit_is_in_the_schema(document, path, method, name, schema):
    assert schema.items() <= parameter(document, path, method, name).items()


def test_the_json_page_is_documented_as_json_only(document):
    responses = document["paths"]["/api/runs/{id}/events"]["get"]["responses"]
    assert list(responses["200"]["content"]) == ["application/json"]
    stream = document["paths"]["/api/runs/{id}/events/stream"]["get"]["responses"]
    assert list(stream["200"]["content"]) == ["text/event-stream"]


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return client


@pytest.mark.django_db
def test_the_bounds_the_schema_allows_are_accepted_and_those_past_them_refused(api, make_ad):
    run = Run.objects.create(
        conversation=Conversation.objects.create(ad=make_ad()),
        input_text="x",
        status="succeeded",
        finished_at=timezone.now(),
    )
    events = f"/api/runs/{run.pk}/events"
    assert api.get(events, {"after": 0, "wait": 60}).status_code == 200  # finished: at once
    assert api.get(events, {"wait": 61}).status_code == 400
    assert api.get(events, {"after": -1}).status_code == 400


@pytest.mark.django_db
def test_no_stream_to_resume_is_a_204_without_a_body_or_content_type(api, make_ad):
    ad = make_ad()
    response = api.get(f"/api/ads/{ad.pk}/ui-chat/new-chat/stream")
    assert response.status_code == 204
    assert "Content-Type" not in response.headers
    assert response.content == b""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("chat_id", "status"),
    [
        ("new-chat", 204),  # any text the schema allows is a chat id: no run to resume
        ("chat%20%C3%A9t%C3%A9", 204),
        ("00000000-0000-0000-0000-000000000000", 204),
        ("a%2Fb", 404),  # a "/" the pattern forbids: no such path
    ],
)
def test_the_chat_ids_the_schema_allows_are_the_ones_the_stream_takes(
    api, make_ad, document, chat_id, status
):
    pattern = parameter(document, "/api/ads/{ad_id}/ui-chat/{chat_id}/stream", "get", "chat_id")
    allowed = re.fullmatch(pattern["pattern"], unquote(chat_id)) is not None

    response = api.get(f"/api/ads/{make_ad().pk}/ui-chat/{chat_id}/stream")

    assert response.status_code == status
    assert allowed is (status == 204)
