"""Streams a user may hold open at once (event streams, long polls, ui-chat streams):
past ``ADSTUDIO_MAX_STREAMS_PER_USER`` a new one is a 429 with Retry-After, and closing
one frees its slot; counted in Redis, so across web processes."""

from __future__ import annotations

import pytest
import redis
from django.core.signals import request_finished
from django.db import close_old_connections
from rest_framework.test import APIClient

from conversations.models import Conversation, Run
from tests.support.worker import REDIS_URL

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["redis", "process memory"])
def slots(request, settings):
    """Counted in this test process's Redis (its slots emptied first), or, without
    CACHE_URL, in process memory."""
    settings.ADSTUDIO_MAX_STREAMS_PER_USER = 2
    if request.param == "redis":
        client = redis.Redis.from_url(REDIS_URL)
        stale = list(client.scan_iter("adstudio:streams:*"))
        if stale:
            client.delete(*stale)
        client.close()
        settings.CACHE_URL = REDIS_URL
    else:
        settings.CACHE_URL = ""
    return request.param


@pytest.fixture
def run(make_ad):
    return Run.objects.create(
        conversation=Conversation.objects.create(ad=make_ad()), input_text="x"
    )


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def close(response) -> None:
    """Closing a response as the web server does when its client goes away (the test
    database connection stays)."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def test_past_the_cap_a_stream_is_a_429_until_one_closes(slots, run, user, other_user):
    run.conversation.ad.workspace.memberships.create(user=other_user, role="viewer")
    tab, other_tab = client_of(user), client_of(user)  # one user's two browser tabs
    stream = f"/api/runs/{run.pk}/events/stream"

    first, second = tab.get(stream), other_tab.get(stream)
    third = tab.get(stream)
    others = client_of(other_user).get(stream)
    close(first)
    again = tab.get(stream)

    assert (first.status_code, second.status_code) == (200, 200)
    assert third.status_code == 429
    assert third["Retry-After"] == "5"
    assert third.json()["error"]["code"] == "too_many_streams"
    assert others.status_code == 200  # the cap is the user's
    assert again.status_code == 200
    for response in (second, others, again):
        close(response)


def test_long_polls_and_ui_chat_streams_count_too(slots, run, user):
    """Refused at the cap: neither waits (a long poll given its slot would)."""
    api = client_of(user)
    held = [api.get(f"/api/runs/{run.pk}/events/stream") for _ in range(2)]
    runs_before = Run.objects.count()

    chat = api.post(
        f"/api/ads/{run.conversation.ad_id}/ui-chat",
        {
            "id": "c",
            "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        },
        format="json",
    )
    poll = api.get(f"/api/runs/{run.pk}/events?wait=1")

    assert chat.status_code == 429 and poll.status_code == 429
    assert Run.objects.count() == runs_before  # refused before a run was started
    close(held[0])
    again = api.get(f"/api/runs/{run.pk}/events/stream")
    assert again.status_code == 200  # the freed slot is taken again
    for response in (held[1], again):
        close(response)


def test_an_idle_stream_ends_asking_its_event_source_to_come_back_later(user, run):
    response = client_of(user).get(f"/api/runs/{run.pk}/events/stream?wait=1")

    body = b"".join(response.streaming_content).decode()

    assert body.startswith("retry: 1000\n\n")
    assert body.endswith(": idle\nretry: 10000\n\n")


@pytest.fixture
def redis_slots(settings):
    """Slots counted in this test process's Redis, two a user."""
    settings.ADSTUDIO_MAX_STREAMS_PER_USER = 2
    settings.CACHE_URL = REDIS_URL
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(*client.scan_iter("adstudio:streams:*"), "adstudio:streams:none")
    yield client
    client.close()


def test_open_streams_count_again_after_redis_restarts_empty(redis_slots):
    from adstudio.stream_slots import stream_slot

    held = [stream_slot("u1"), stream_slot("u1")]
    assert all(held) and stream_slot("u1") is None

    redis_slots.flushdb()  # what a restart without persistence leaves
    for slot in held:
        slot.renew()  # the streams go on, renewing as they do every 10 s

    assert stream_slot("u1") is None  # the cap holds for streams opened before
    held[0].give_back()
    assert stream_slot("u1") is not None


def test_a_users_slots_live_as_long_as_their_streams_renew(redis_slots):
    """No new stream for longer than a slot's life: the set lives on with its renewals."""
    from adstudio.stream_slots import SLOT_TTL_S, stream_slot

    slot = stream_slot("u2")
    redis_slots.pexpire("adstudio:streams:u2", 50)  # as if SLOT_TTL_S had nearly passed

    slot.renew()

    assert redis_slots.pttl("adstudio:streams:u2") > (SLOT_TTL_S - 5) * 1000
    assert redis_slots.zcard("adstudio:streams:u2") == 1
