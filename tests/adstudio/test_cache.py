"""The shared cache on a Redis of the test's own, which the test stops: requests go on,
each process caching and throttling on its own until Redis is back."""

from __future__ import annotations

import logging

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Run

BRIEF = {"clientDescription": "Spotify Premium family plan", "language": "Thai"}


@pytest.fixture
def redis_cache(private_redis, settings):
    settings.CACHES = {
        "default": {"BACKEND": "adstudio.cache.FallbackRedisCache", "LOCATION": private_redis.url}
    }
    settings.CACHE_URL = private_redis.url  # the run rate limit's store
    return private_redis


def test_while_redis_is_down_the_cache_is_the_process_own(redis_cache, caplog):
    cache.set("shared", "in redis")
    assert cache.get("shared") == "in redis"

    with caplog.at_level(logging.WARNING, logger="adstudio.cache"), redis_cache.down():
        assert cache.get("shared") is None  # not in this process's memory
        cache.set("during", "in memory")
        assert cache.get("during") == "in memory"
        assert cache.add("counter", 1) and cache.incr("counter") == 2
        outage = [r.getMessage() for r in caplog.records]
    assert len(outage) == 1 and outage[0].startswith("cache unreachable (")

    cache.set("after", "in redis again")  # the restarted Redis is empty, and used again
    assert cache.get("after") == "in redis again"
    assert cache.get("during") is None
    assert caplog.records[-1].getMessage() == "cache reachable again"


@pytest.mark.django_db
def test_a_cache_outage_does_not_cost_a_message_and_runs_are_still_limited(
    redis_cache, user, ad, settings
):
    """Generate and chat are limited in the cache's Redis: with Redis down they answer 202
    and store the run, and the limit holds per process."""
    settings.ADSTUDIO_RUN_RATE = "2/minute"
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")

    with redis_cache.down():
        generate = api.post("/api/ai/generate", {"brief": BRIEF}, format="json")
        chat = api.post(f"/api/ads/{ad.pk}/chat", {"message": "hi"}, format="json")
        third = api.post(f"/api/ads/{ad.pk}/chat", {"message": "again"}, format="json")

    assert (generate.status_code, chat.status_code) == (202, 202), generate.content
    assert third.status_code == 429
    assert {str(pk) for pk in Run.objects.values_list("pk", flat=True)} == {
        generate.json()["runId"],
        chat.json()["runId"],
    }
