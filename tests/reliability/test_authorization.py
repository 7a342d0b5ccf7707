"""Every endpoint x {anonymous, another user, the owner, staff}."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Conversation, Message, Run
from drafts.services import draft_create
from tests.support.versions import music

pytestmark = pytest.mark.django_db

BRIEF = {"clientDescription": "Coffee", "language": "th", "durationSeconds": 30}


@pytest.fixture
def world(ad, make_voice):
    voice = make_voice()
    draft, _ = draft_create(ad=ad, version=music("calm"))
    conversation = Conversation.objects.create(ad=ad)
    run = Run.objects.create(
        conversation=conversation, input_text="hi", status="succeeded", finished_at=timezone.now()
    )
    Message.objects.create(conversation=conversation, seq=1, role="user", text="hi", run=run)
    return {
        "ad": ad.pk,
        "draft": draft.pk,
        "conversation": conversation.pk,
        "run": run.pk,
        "voice": voice.pk,
    }


# (method, path template, body, status for owner, status for staff)
ENDPOINTS = [
    ("get", "/api/ads/", None, 200, 200),
    ("post", "/api/ads/", BRIEF, 201, 201),
    ("get", "/api/ads/{ad}/", None, 200, 200),
    ("patch", "/api/ads/{ad}/", {"market": "US"}, 200, 200),
    ("get", "/api/ads/{ad}/drafts/", None, 200, 200),
    ("get", "/api/ads/{ad}/state", None, 200, 200),
    ("get", "/api/ads/{ad}/conversation", None, 200, 200),
    ("post", "/api/ads/{ad}/chat", {"message": "hi"}, 202, 202),
    ("post", "/api/ai/generate", {"adId": "{ad}"}, 202, 202),
    ("get", "/api/drafts/{draft}/", None, 200, 200),
    ("post", "/api/drafts/{draft}/activate", None, 200, 200),
    ("get", "/api/runs/{run}", None, 200, 200),
    ("get", "/api/runs/{run}/events", None, 200, 200),
    ("post", "/api/runs/{run}/cancel", None, 202, 202),
    ("get", "/api/conversations/{conversation}/messages/", None, 200, 200),
    ("get", "/api/voices/?language=th", None, 200, 200),
    ("get", "/api/voices/{voice}/", None, 200, 200),
    ("get", "/api/stats/", None, 403, 200),
    ("delete", "/api/ads/{ad}/", None, 204, 204),
]
PUBLIC = {"/api/ads/", "/api/voices/?language=th", "/api/voices/{voice}/", "/api/stats/"}


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return client


def fill(template, world):
    if isinstance(template, dict):
        return {k: fill(v, world) for k, v in template.items()}
    if isinstance(template, str):
        return template.format(**world)
    return template


@pytest.mark.parametrize(
    ("method", "path", "body", "owner_status", "staff_status"),
    ENDPOINTS,
    ids=[f"{m.upper()} {p}" for m, p, *_ in ENDPOINTS],
)
def test_authorization_matrix(
    world, user, other_user, staff_user, method, path, body, owner_status, staff_status
):
    url, data = fill(path, world), fill(body, world)

    def status(who) -> int:
        return getattr(client_for(who), method)(url, data, format="json").status_code

    assert status(None) == 401
    other = status(other_user)
    if path in PUBLIC:  # not tied to one owner: the catalogue, your own list, staff stats
        assert other == owner_status
    else:
        assert other == 404, "another user's object must not be confirmed to exist"
    assert status(user) == owner_status
    if method != "delete":
        assert status(staff_user) == staff_status
