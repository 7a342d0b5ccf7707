"""kombu's Redis transport, as the workers use it, without one failure it has when the
broker connection drops.

With ack emulation off (settings: Redis keeps no copy of a delivered message), kombu puts
a channel's delivered, unacknowledged messages back on the queue when the channel
closes. After a lost connection the channel has no connection left to do that with: the
attempt fails (``UNABLE TO RESTORE n MESSAGES: AttributeError("'NoneType' object has no
attribute 'hostname'")``) and dumps the messages to a file in the temporary folder, on
every broker outage. Nothing can be put back on a broker that cannot be reached, and
nothing needs to be: the runs those messages name are in PostgreSQL, and the recovery
sweep enqueues them again. So a channel whose connection is gone restores nothing; one
closed normally (a worker's warm shutdown) still puts its messages back.
"""

from __future__ import annotations

import logging

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
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.ack_emulation:  # the parent picks virtual.QoS then
            self.QoS = QoS


class Transport(redis.Transport):
    Channel = Channel
