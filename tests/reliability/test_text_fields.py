"""Any Unicode in any text field of the endpoints that store text is answered 2xx or 4xx,
never 500: NUL characters and lone surrogates, which Python holds and PostgreSQL refuses,
are refused before anything touches the database."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from rest_framework.test import APIClient

from conversations.models import Run

pytestmark = pytest.mark.django_db

# Every code point, with the ones PostgreSQL refuses (NUL, lone surrogates) drawn often.
ANY_TEXT = st.text(
    st.one_of(
        st.sampled_from(["\x00", "\ud800", "\udfff", "\ufffe"]),
        st.characters(exclude_categories=()),
    ),
    max_size=40,
)

BRIEF = {"clientDescription": "Spotify", "language": "th", "targetAudience": "families"}
GENERATE_FIELDS = ("clientDescription", "targetAudience", "language", "additionalContext")
AD_FIELDS = ("title", "clientDescription", "market", "language", "format")
ENDPOINTS = [
    ("chat", "message"),
    ("ui-chat", "text"),
    ("ui-chat", "message id"),
    ("ui-chat", "chat id"),
    *(("generate", field) for field in GENERATE_FIELDS),
    *(("ads", field) for field in AD_FIELDS),
    ("ads PATCH", "title"),
]


def ui_chat(field: str, text: str) -> dict:
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
    if field == "text":
        message["parts"][0]["text"] = text
    elif field == "message id":
        message["id"] = text
    return {"id": text if field == "chat id" else "chat", "messages": [message]}


def request_for(endpoint: tuple[str, str], ad_id, text: str) -> tuple[str, str, dict]:
    """(method, path, body) with ``text`` in the endpoint's field."""
    name, field = endpoint
    if name == "chat":
        return "post", f"/api/ads/{ad_id}/chat", {"message": text}
    if name == "ui-chat":
        return "post", f"/api/ads/{ad_id}/ui-chat", ui_chat(field, text)
    if name == "generate":
        return "post", "/api/ai/generate", {"brief": {**BRIEF, field: text}}
    if name == "ads":
        return "post", "/api/ads/", {**BRIEF, field: text}
    return "patch", f"/api/ads/{ad_id}/", {field: text}


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=" ".join)
def test_any_text_in_a_body_field_is_answered_without_a_server_error(
    endpoint, user, make_ad, settings
):
    # The run limit would answer 429 before the body is read: not what is tested here.
    settings.ADSTUDIO_RUN_RATE = "1000000/minute"
    ad = make_ad()
    client = APIClient()
    client.force_authenticate(user)

    @examples(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(text=ANY_TEXT)
    @example(text="Make it \x00 shorter")  # what PostgreSQL refuses, always tried
    @example(text="Make it \ud800 shorter")
    def answered(text: str) -> None:
        method, path, body = request_for(endpoint, ad.pk, text)
        # ensure_ascii: a lone surrogate travels as the JSON escape a client would send.
        response = getattr(client, method)(path, json.dumps(body), content_type="application/json")
        assert response.status_code < 500, (text, response.content[:300])

    answered()


@pytest.mark.parametrize("text", ["Make it \x00 shorter", "Make it \ud800 shorter"])
def test_a_nul_or_a_lone_surrogate_in_a_ui_chat_message_is_a_400(api_user, make_ad, text):
    client, _ = api_user
    ad = make_ad()
    body = ui_chat("text", text)

    response = client.post(
        f"/api/ads/{ad.pk}/ui-chat", json.dumps(body), content_type="application/json"
    )

    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"]["messages"]
    assert not Run.objects.exists()


@pytest.fixture
def api_user(user):
    client = APIClient()
    client.force_authenticate(user)
    return client, user
