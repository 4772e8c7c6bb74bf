"""The Redis broker transport, with two changes from kombu's. First, a channel reuses its Redis client.

kombu builds a new `redis.Redis` for every publish (`Channel._create_client`), and each one builds
redis-py's table of ~170 response callbacks: about 0.3 ms of CPU per enqueued task, a third of what
enqueueing a submission costs. A client over the channel's connection pool is safe to reuse (it keeps
no per-call state; connections come from the pool), so the channel keeps one until its pool changes.

`portal.celery` registers this class for `redis://` and `rediss://` broker URLs.

A second change: a worker whose broker went away while it held prefetched messages survives it. Celery then
closes the broken connection, and afterwards kombu still works through the channel of that connection: the close
restores the unacknowledged messages, and a task that ends acknowledges its message. Each needs a client, which
kombu makes from a connection that is already gone: an `AttributeError` that the worker took for an
"unrecoverable error" and stopped on (found by the soak's Redis restart, docs/operations.md "Soak"). A channel
without a connection now raises Redis' `ConnectionError`, which Celery handles (it logs the failed
acknowledgement and reconnects), and the messages it held are left where they are, in Redis' unacked hash: any
worker restores them after the visibility timeout, as after a SIGKILL (a task run twice is idempotent).
"""

from __future__ import annotations

import logging

from kombu.transport import TRANSPORT_ALIASES, redis
from redis.exceptions import ConnectionError as BrokerGone

TRANSPORT = "portal.broker:Transport"
log = logging.getLogger(__name__)


class QoS(redis.QoS):
    def restore_unacked(self, client=None):
        held = len(self._delivered)
        try:
            return super().restore_unacked(client)
        except BrokerGone as error:
            self._delivered.clear()
            log.warning("broker gone (%s): %d unacknowledged message(s) left for the visibility timeout", error, held)
            return None


class Channel(redis.Channel):
    QoS = QoS
    _sync_client: tuple | None = None  # (the pool it was made for, the client)

    def _create_client(self, asynchronous=False):
        if self.connection is None or self.connection.client is None:
            raise BrokerGone("the broker connection of this channel is closed")
        if asynchronous:  # the consumer's client (BRPOP, pub/sub): kombu's own handling
            return super()._create_client(asynchronous=True)
        pool = self.pool
        if self._sync_client is None or self._sync_client[0] is not pool:
            self._sync_client = (pool, super()._create_client())
        return self._sync_client[1]


class Transport(redis.Transport):
    Channel = Channel


def install() -> None:
    """Make `redis://` and `rediss://` broker URLs use this transport (idempotent)."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = TRANSPORT
