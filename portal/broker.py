"""The Redis broker transport, with one change from kombu's: a channel reuses its Redis client.

kombu builds a new `redis.Redis` for every publish (`Channel._create_client`), and each one builds
redis-py's table of ~170 response callbacks: about 0.3 ms of CPU per enqueued task, a third of what
enqueueing a submission costs. A client over the channel's connection pool is safe to reuse (it keeps
no per-call state; connections come from the pool), so the channel keeps one until its pool changes.

`portal.celery` registers this class for `redis://` and `rediss://` broker URLs.

A second change: a worker whose broker went away while it held prefetched messages survives it. Celery then
closes the broken connection; kombu's channel close restores the unacknowledged messages through a new client,
but the connection it would make one from is already gone (`AttributeError` on its `hostname`), and the worker
stopped on that "unrecoverable error" (found by the soak's Redis restart, docs/operations.md "Soak"). The
messages are in Redis' unacked hash anyway: any worker restores them after the visibility timeout, as after a
SIGKILL. So when there is no connection to restore them through, or Redis refuses, they are left there.
"""

from __future__ import annotations

import logging

from kombu.transport import TRANSPORT_ALIASES, redis

log = logging.getLogger(__name__)


class QoS(redis.QoS):
    def restore_unacked(self, client=None):
        held = len(self._delivered)
        if client is None and self.channel.connection.client is None:
            self._delivered.clear()
            log.warning("broker connection gone: %d unacknowledged message(s) left for the visibility timeout", held)
            return None
        try:
            return super().restore_unacked(client)
        except self.channel.connection.connection_errors as error:
            self._delivered.clear()
            log.warning(
                "broker unreachable (%s): %d unacknowledged message(s) left for the visibility timeout", error, held
            )
            return None


TRANSPORT = "portal.broker:Transport"


class Channel(redis.Channel):
    QoS = QoS
    _sync_client: tuple | None = None  # (the pool it was made for, the client)

    def _create_client(self, asynchronous=False):
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
