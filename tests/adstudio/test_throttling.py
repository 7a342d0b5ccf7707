"""The run rate limit holds exactly under concurrency: one atomic check in Redis per
request, so parallel requests cannot all read the same count and pass."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
import redis
from django.conf import settings as settings_module
from django.db import connection
from rest_framework.test import APIClient

from adstudio.throttling import limiter, rate_item
from conversations.models import Run
from tests.support.api import api_for
from tests.support.worker import REDIS_URL
from workspaces.models import Membership, Workspace
from workspaces.roles import MemberRole

PARALLEL = 60


@pytest.fixture
def shared_limit(settings):
    """The cache on this test process's Redis, as web processes share it in production
    (``CACHE_URL``), the limit's windows emptied first."""
    client = redis.Redis.from_url(REDIS_URL)
    stale = list(client.scan_iter("adstudio:rate*"))
    if stale:
        client.delete(*stale)
    settings.CACHE_URL = REDIS_URL
    settings.CACHES = {
        "default": {"BACKEND": "adstudio.cache.FallbackRedisCache", "LOCATION": REDIS_URL}
    }
    settings.ADSTUDIO_RUN_RATE = "30/minute"
    yield client
    client.close()


@pytest.mark.django_db(transaction=True)
def test_parallel_chats_from_one_user_pass_the_limit_exactly(
    shared_limit, user, other_user, make_ad, monkeypatch
):
    ad = make_ad()
    monkeypatch.setattr("conversations.services.run_enqueue", lambda run_id: None)
    all_ready = threading.Barrier(PARALLEL, timeout=30)
    statuses: list[int] = []

    def chat(n: int) -> None:
        client = APIClient()
        client.force_authenticate(user)
        try:
            all_ready.wait()
            response = client.post(
                f"/api/ads/{ad.pk}/chat", {"message": f"take {n}"}, format="json"
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=chat, args=(n,)) for n in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert Counter(statuses) == {202: 30, 429: PARALLEL - 30}
    assert Run.objects.count() == 30
    # The limit is the user's: another user still gets through.
    other = APIClient()
    other.force_authenticate(other_user)
    assert other.post(f"/api/ads/{ad.pk}/chat", {"message": "mine"}).status_code == 404
    theirs = make_ad(owner=other_user)
    assert other.post(f"/api/ads/{theirs.pk}/chat", {"message": "mine"}).status_code == 202


def _window_left(user) -> int:
    """What the user's window in Redis has left of the limit."""
    item = rate_item(settings_module.ADSTUDIO_RUN_RATE)
    return limiter(REDIS_URL).get_window_stats(item, "runs", str(user.pk))[1]


@pytest.mark.django_db
def test_replays_of_an_idempotent_post_are_answered_and_never_counted(
    shared_limit, settings, user, ad
):
    settings.ADSTUDIO_RUN_RATE = "5/minute"
    api = api_for(user)
    chat = f"/api/ads/{ad.pk}/chat"

    def post(key: str, message: str = "Make the music more upbeat"):
        return api.post(chat, {"message": message}, format="json", HTTP_IDEMPOTENCY_KEY=key)

    first = post("retry-me")
    replays = [post("retry-me") for _ in range(100)]

    assert first.status_code == 202
    assert Counter(r.status_code for r in replays) == {202: 100}
    assert {r.json()["runId"] for r in replays} == {first.json()["runId"]}
    assert Run.objects.count() == 1 and _window_left(user) == 4
    # New keys still count: four pass, the fifth is refused.
    fresh = [post(f"new-{n}", f"take {n}") for n in range(5)]
    assert [r.status_code for r in fresh] == [202, 202, 202, 202, 429]
    assert Run.objects.count() == 5
    # With the budget spent, a replay is still answered with its run, the key sent with
    # another request still refused for what it is, and a request without a key limited.
    assert post("retry-me").json()["runId"] == first.json()["runId"]
    assert post("retry-me", "another message").json()["error"]["code"] == "idempotency_key_reused"
    assert api.post(chat, {"message": "no key"}, format="json").status_code == 429
    assert Run.objects.count() == 5


@pytest.mark.django_db
def test_a_replay_of_a_generation_is_not_counted_either(shared_limit, settings, user):
    settings.ADSTUDIO_RUN_RATE = "1/minute"
    api = api_for(user)
    body = {"brief": {"clientDescription": "Spotify Premium family plan", "language": "th"}}

    def generate(key: str):
        return api.post("/api/ai/generate", body, format="json", HTTP_IDEMPOTENCY_KEY=key)

    first = generate("brief-1")
    replays = [generate("brief-1") for _ in range(10)]

    assert {r.status_code for r in [first, *replays]} == {202}
    assert {r.json()["runId"] for r in replays} == {first.json()["runId"]}
    assert generate("brief-2").status_code == 429
    assert Run.objects.count() == 1


@pytest.mark.django_db
def test_a_replay_is_still_authorised(shared_limit, settings, user, make_ad):
    settings.ADSTUDIO_RUN_RATE = "1/minute"
    team = Workspace.objects.create(name="Team")
    membership = Membership.objects.create(workspace=team, user=user, role=MemberRole.EDITOR)
    ad = make_ad(workspace=team)
    api = api_for(user)
    chat = f"/api/ads/{ad.pk}/chat"
    headers = {"format": "json", "HTTP_IDEMPOTENCY_KEY": "k"}
    assert api.post(chat, {"message": "hi"}, **headers).status_code == 202

    membership.role = MemberRole.VIEWER
    membership.save(update_fields=["role"])
    assert api.post(chat, {"message": "hi"}, **headers).status_code == 403
    membership.delete()
    assert api.post(chat, {"message": "hi"}, **headers).status_code == 404
    anonymous = APIClient().post(chat, {"message": "hi"}, **headers)
    assert anonymous.status_code == 401


@pytest.mark.django_db(transaction=True)  # the transport's view reads on a connection of its own
def test_a_ui_chat_message_sent_again_is_not_counted(shared_limit, settings, user, ad):
    settings.ADSTUDIO_RUN_RATE = "1/minute"
    api = api_for(user)

    def send(message_id: str, trigger: str = "submit-message"):
        body = {
            "id": str(ad.pk),
            "trigger": trigger,
            "messages": [
                {"id": message_id, "role": "user", "parts": [{"type": "text", "text": "Shorter"}]}
            ],
        }
        response = api.post(f"/api/ads/{ad.pk}/ui-chat", body, format="json")
        response.close()  # the stream is not read: its slot is given back
        return response.status_code

    assert [send("m1") for _ in range(6)] == [200] * 6
    assert send("m2") == 429
    assert send("m1", "regenerate-message") == 429  # a new reply is a new run
    assert Run.objects.count() == 1
