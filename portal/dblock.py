"""Retrying a write that lost the race for SQLite's single write lock ("database is locked").

The embedded default runs several processes against one SQLite file (`manage.py devserver`). Writers wait
up to SQLITE_BUSY_TIMEOUT for the lock (settings); a write that still times out is retried here, by the
callers whose work is idempotent: the in-process tasks (create/delete pods), the watchers and the periodic
jobs. PostgreSQL never raises this error, so there the wrapper only costs a call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection

from portal import backoff

log = logging.getLogger(__name__)
T = TypeVar("T")

ATTEMPTS = 5
BACKOFF_START = 0.5  # seconds before the second attempt; doubles, capped at BACKOFF_MAX
BACKOFF_MAX = 5.0


def is_locked(error: BaseException) -> bool:
    """SQLite's "database is locked" / "database table is locked" / "database is busy"."""
    text = str(error).lower()
    return isinstance(error, OperationalError) and ("locked" in text or "busy" in text)


def retry_locked(fn: Callable[[], T], what: str, *, attempts: int = ATTEMPTS) -> T:
    """`fn()`, again (with backoff) while it fails on a locked database; the last failure propagates.

    Only outside a transaction: inside one, the failed statement has spoiled it, and the caller that
    owns the transaction must retry as a whole.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except OperationalError as error:
            if not is_locked(error) or attempt == attempts or connection.in_atomic_block:
                raise
            pause = backoff.capped(BACKOFF_START, BACKOFF_MAX, attempt)
            log.warning("%s: %s (attempt %d of %d); retrying in %.1fs", what, error, attempt, attempts, pause)
            time.sleep(pause)
    raise AssertionError("unreachable")
