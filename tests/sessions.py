"""Another PostgreSQL session on the test database: what a second web worker or process would do there."""

from __future__ import annotations

import psycopg

from tests.docs_runner import database_url


def other_session() -> psycopg.Connection:
    """A new autocommit connection to the database the tests use (use it as a context manager)."""
    return psycopg.connect(database_url(), autocommit=True)
