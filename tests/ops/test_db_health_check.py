"""The database health check (`DATABASE_CONN_HEALTH_CHECKS`, portal/postgresql/base.py): a kept connection
with nothing to read is reused without a query; one the server ended is replaced before the request uses it.
Real PostgreSQL sessions; what a session last ran is read from pg_stat_activity by another session."""

from __future__ import annotations

import select

import pytest
from django.core.signals import request_started
from django.db import close_old_connections, connection

from tests.polling import wait_until
from tests.sessions import other_session

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def kept_connection():
    """The default connection as a server keeps it: persistent, health-checked, freshly opened."""
    saved = {key: connection.settings_dict[key] for key in ("CONN_MAX_AGE", "CONN_HEALTH_CHECKS")}
    connection.settings_dict.update(CONN_MAX_AGE=600, CONN_HEALTH_CHECKS=True)
    connection.close()
    connection.ensure_connection()
    yield connection
    connection.settings_dict.update(saved)
    connection.close()


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid() /* marker */")
        return cursor.fetchone()[0]


def _next_request() -> None:
    """What Django does at the start of a request: the kept connection is to be checked before its first use."""
    request_started.send(sender=None)


def test_an_idle_connection_with_nothing_to_read_is_reused_without_a_query(kept_connection):
    pid = _backend_pid()
    _next_request()
    kept_connection.close_if_health_check_failed()  # what the request's first query runs first
    with other_session() as other:
        last = other.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
    assert last == "SELECT pg_backend_pid() /* marker */"  # no SELECT 1 since
    assert _backend_pid() == pid and kept_connection.health_check_done


def test_a_connection_the_server_ended_is_replaced_before_the_request_uses_it(kept_connection):
    pid = _backend_pid()
    with other_session() as other:
        assert other.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
    socket = kept_connection.connection.pgconn.socket
    wait_until(lambda: select.select([socket], [], [], 0)[0], what="the server's goodbye on the socket")
    _next_request()
    replaced = _backend_pid()  # the first query of the request: on a new connection, not an error
    assert replaced != pid


def test_a_connection_inside_a_transaction_gets_djangos_check(kept_connection):
    """Not idle (a transaction left open): the cheap check does not decide; Django's own check and rules do."""
    pid = _backend_pid()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
    _next_request()
    kept_connection.close_if_health_check_failed()
    with other_session() as other:
        last = other.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
    assert last == "SELECT 1"
    close_old_connections()
