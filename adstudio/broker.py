"""kombu's Redis transport, as the workers use it, without one failure it has when the
broker connection drops, and without a new Redis client for every message it sends.

With ack emulation off (settings: Redis keeps no copy of a delivered message), kombu puts
a channel's delivered, unacknowledged messages back on the queue when the channel
closes. After a lost connection the channel has no connection left to do that with: the
attempt fails (``UNABLE TO RESTORE n MESSAGES: AttributeError("'NoneType' object has no
attribute 'hostname'")``) and dumps the messages to a file in the temporary folder, on
every broker outage. Nothing can be put back on a broker that cannot be reached, and
nothing needs to be: the runs those messages name are in PostgreSQL, and the recovery
sweep enqueues them again. So a channel whose connection is gone restores nothing; one
closed normally (a worker's warm shutdown) still puts its messages back.

kombu makes a ``redis.Redis`` client for each command it sends outside a consumer's own
(a task's publish included); the client holds no connection of its own (they come from
the channel's pool), but making one builds its table of 170-odd response callbacks
(about a fifth of a chat POST's enqueue). A channel keeps one per pool instead: a client
sharing a pool is safe across threads, and a new pool (after a fork or a reconnection)
gets a new client.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

from kombu.transport import redis, virtual

logger = logging.getLogger(__name__)


class QoS(virtual.QoS):
    def restore_unacked_once(self, stderr=None):
        connection = self.channel.connection
        if connection is None or connection.client is None:
            self._on_collect.cancel()
            self._flush()
            if self._delivered:
                logger.info(
                    "broker connection lost: %d delivered message(s) not put back; the "
                    "recovery sweep enqueues their runs again",
                    len(self._delivered),
                )
            self._delivered.clear()
            self._delivered.restored = True
            return None
        return super().restore_unacked_once(stderr)


class Channel(redis.Channel):
    _pool_client = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.ack_emulation:  # the parent picks virtual.QoS then
            self.QoS = QoS

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        pool = self.pool
        if self._pool_client is None or self._pool_client.connection_pool is not pool:
            self._pool_client = self._create_client()
        yield self._pool_client


class Transport(redis.Transport):
    Channel = Channel
