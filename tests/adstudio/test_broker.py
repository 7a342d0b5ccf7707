"""The broker transport sends every message through one Redis client per pool."""

from __future__ import annotations

import base64
import json

import redis
from kombu import Connection, Exchange, Queue

import adstudio.celery  # noqa: F401  (redis:// goes through adstudio.broker)
from adstudio import broker
from tests.support.fixtures import REDIS_URL

QUEUE = "test-broker-publish"


class CountedRedis(redis.Redis):
    made = 0

    def __init__(self, *args, **kwargs):
        type(self).made += 1
        super().__init__(*args, **kwargs)


def _queued(client: redis.Redis) -> list[str]:
    messages = (json.loads(raw) for raw in reversed(client.lrange(QUEUE, 0, -1)))
    return [json.loads(base64.b64decode(message["body"])) for message in messages]


def _publish(producer, text: str) -> None:
    producer.publish(text, routing_key=QUEUE, serializer="json", retry=False)


def test_one_channel_sends_many_messages_through_one_client_and_a_new_pool_gets_a_new_one():
    CountedRedis.made = 0
    plain = redis.Redis.from_url(REDIS_URL)
    plain.delete(QUEUE)
    queue = Queue(QUEUE, Exchange(QUEUE, type="direct"), routing_key=QUEUE)
    try:
        with Connection(REDIS_URL) as connection:
            channel = connection.default_channel
            assert isinstance(channel, broker.Channel)
            channel.Client = CountedRedis
            producer = connection.Producer(channel)
            queue(channel).declare()

            for n in range(20):
                _publish(producer, f"message {n}")
            assert CountedRedis.made == 1
            assert len(_queued(plain)) == 20

            channel._after_fork()  # a forked process drops the pools it inherited
            _publish(producer, "after the fork")
            assert CountedRedis.made == 2
            _publish(producer, "and again")
            assert CountedRedis.made == 2

        assert _queued(plain) == [f"message {n}" for n in range(20)] + [
            "after the fork",
            "and again",
        ]
    finally:  # the queue and the bindings kombu keeps of it
        plain.delete(QUEUE, *plain.scan_iter(f"_kombu.binding*.{QUEUE}"))
        plain.close()
