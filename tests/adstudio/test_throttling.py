"""The run rate limit holds exactly under concurrency: one atomic check in Redis per
request, so parallel requests cannot all read the same count and pass."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
import redis
from django.db import connection
from rest_framework.test import APIClient

from conversations.models import Run
from tests.support.worker import REDIS_URL

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
