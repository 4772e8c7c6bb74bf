"""Django's PostgreSQL backend, with the connection health check (`CONN_HEALTH_CHECKS`) made free for an idle
connection that is fine.

Django checks a kept connection before its first query of each request by sending `SELECT 1`: a round trip
(and a transaction) on every request, about a tenth of a workflow submission's database work. An idle
connection, between requests, has nothing to read: a server that ends it (a restart, `pg_terminate_backend`,
an idle timeout, a pooler closing it) sends an error message or closes the socket first, which makes the
socket readable. So: nothing to read is a usable connection, with no query; anything to read (that, or an
asynchronous notice) is settled by Django's own `SELECT 1`, which reads it. A peer that vanishes without a
word (a cut cable) escapes both checks alike: `SELECT 1` would wait for the network timeout too.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq

from portal.postgresql import timestamps


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        # timestamps parsed by psycopg's compiled loader, not Django's pure-Python one (portal.postgresql.timestamps)
        connection.adapters.register_loader(timestamps.TIMESTAMPTZ, timestamps.loader(self.timezone))
        return connection

    def close_if_health_check_failed(self) -> None:
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        if not self._idle_and_quiet():
            super().close_if_health_check_failed()  # Django's check: SELECT 1, closing what fails it
        self.health_check_done = True

    def _idle_and_quiet(self) -> bool:
        """Open, idle and with nothing sent by the server since its last answer."""
        connection = self.connection
        if connection.closed or connection.broken or connection.info.transaction_status != pq.TransactionStatus.IDLE:
            return False
        try:
            readable, _, _ = select.select([connection.pgconn.socket], [], [], 0)
        except (OSError, ValueError):  # no socket any more
            return False
        return not readable
