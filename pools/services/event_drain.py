"""The loop both long-running watchers share: watch threads queue items, the caller's thread applies them.

Database work then happens in one thread, in order. Subclasses say what a queued item does (`_apply`) and
what runs between items (`_tick`: relists, periodic jobs).

The database may go away under the loop (a restart, a failover, connections terminated by an operator).
Before each batch (at most every `check_every` seconds) the loop drops connections that are unusable or
too old (`close_if_unusable_or_obsolete`; with `CONN_HEALTH_CHECKS` the next query checks the connection
first). When applying an item still fails with a connection error, the connection is closed and the same
item is applied again, after a backoff that doubles up to `database_retry_max`: no event is skipped while
the database is away, and the watch threads keep queueing meanwhile. The fault is logged as a line when it
starts and a line with the count when it ends (`portal.faultlog`), not once per failure. An item the
database keeps refusing while it answers (a bad event, not a lost connection) is skipped after
`ITEM_ATTEMPTS` attempts and counted in `dropped`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

from portal.dblock import is_locked
from portal.faultlog import FaultLog

log = logging.getLogger(__name__)
BACKOFF_START, BACKOFF_MAX = 1.0, 60.0  # seconds before a watch reconnects: doubling, up to the maximum
DATABASE_ERRORS = (OperationalError, InterfaceError)  # the connection is gone (or the server refuses work)
DATABASE_RETRY_START, DATABASE_RETRY_MAX = 0.1, 10.0  # seconds between attempts while the database is away
ITEM_ATTEMPTS = 5  # attempts at one item while the database answers, before it is deemed the item's fault
DATABASE = "database"
T = TypeVar("T")


class Halted(Exception):
    """The loop was asked to stop while it waited for the database."""


def close_broken_connections() -> None:
    """Close the thread's connections after a connection error (each reconnects on its next query)."""
    for conn in connections.all(initialized_only=True):
        conn.close()


def database_answers() -> bool:
    """Does the default database take a new connection and answer `SELECT 1`?"""
    conn = connections[DEFAULT_DB_ALIAS]
    try:
        conn.ensure_connection()
        return conn.is_usable()
    except DATABASE_ERRORS:
        conn.close()
        return False


class EventDrain:
    backoff_max = BACKOFF_MAX
    check_every = 1.0  # seconds: connections are checked before a batch, at most this often
    database_retry_max = DATABASE_RETRY_MAX
    errors = 0  # items whose applying failed (logged, skipped)

    def _backoff(self, failures: int) -> float:
        """How long a watch thread waits after its `failures`-th failure in a row."""
        return min(self.backoff_max, BACKOFF_START * 2 ** max(0, failures - 1))

    def _database_backoff(self, failures: int) -> float:
        """The first retry reconnects at once (a terminated session); then doubling, up to the maximum."""
        return 0.0 if failures <= 1 else min(self.database_retry_max, DATABASE_RETRY_START * 2 ** (failures - 2))

    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()
        self._stopping = threading.Event()
        self._halt = self._stopping  # `run(stop)` makes the command's stop event interrupt database waits too
        self.faults = FaultLog(log, type(self).__name__)
        self.dropped = 0  # items not applied (an error that was not a lost connection, or a stop mid-retry)
        self._next_check = 0.0

    def run(self, stop: threading.Event) -> None:
        """The long-running loop of the management command."""
        self._halt = stop
        try:
            while not stop.is_set():
                self.process(timeout=1.0)
        finally:
            self.faults.close()

    def process(self, timeout: float = 0.0) -> int:
        """Apply queued items (waiting up to `timeout` for the first) and run `_tick` between them."""
        applied = 0
        deadline = time.monotonic() + timeout
        while True:
            self._check_connections()
            self.faults.tick()
            self._guarded(self._tick, "work between events")
            if self._halt.is_set():
                return applied
            try:
                item = self.events.get(timeout=max(0.0, min(deadline - time.monotonic(), 0.2)))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return applied
                continue
            applied += self._handle(item)
            if self._halt.is_set():
                return applied
            deadline = time.monotonic()  # after the first item, drain what is already queued

    def _tick(self) -> None:
        """Work due between items."""

    def _apply(self, item: tuple) -> int:
        raise NotImplementedError

    # ----------------------------------------------------------------------------- the database

    def _check_connections(self) -> None:
        """Before a batch: drop connections that errored and do not answer, or are past CONN_MAX_AGE."""
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self.check_every
        for conn in connections.all(initialized_only=True):
            if not conn.in_atomic_block:  # inside a transaction (a test's): not ours to close
                conn.close_if_unusable_or_obsolete()

    def _handle(self, item: tuple) -> int:
        applied = self._guarded(lambda: self._apply(item), f"applying {item[0]}")
        if applied is None:  # `_apply` returns a count: None is an item given up
            self.dropped += 1
        return applied or 0

    def _guarded(self, work: Callable[[], T], what: str) -> T | None:
        """`work()` through database faults; anything else it raises is logged (de-duplicated) and skipped."""
        try:
            return self._through_database(work)
        except Halted:
            log.warning("%s: stopped while %s waited for the database; the next start lists again",
                        type(self).__name__, what)
        except Exception as error:  # noqa: BLE001 - one bad event (or a bug) must not stop the watcher
            self.errors += 1
            key = f"{what} failed ({type(error).__name__}: {error})"[:300]
            self.faults.failed(key, f"{what} failed", ended=f"{what}: no more {type(error).__name__} since",
                               exc_info=True)
            self.faults.succeeded(key)  # skipped: the loop goes on; repeats within `quiet` are only counted
        return None

    def _through_database(self, work: Callable[[], T]) -> T:
        """Run `work` until the database takes it: after a connection error, close and retry with backoff.

        Raises the error when the database answers yet refused the work `ITEM_ATTEMPTS` times (the work's
        fault), and `Halted` when the loop is stopped meanwhile.
        """
        failures = 0
        while True:
            try:
                result = work()
            except DATABASE_ERRORS as error:
                failures += 1
                close_broken_connections()
                self.faults.failed(DATABASE, f"database connection lost ({str(error).strip()}); reconnecting and "
                                             "applying the held events again until they go through",
                                   ended="database connection restored; every held event was applied")
                # applying is idempotent (guarded updates): a write that lost SQLite's lock waits its turn
                if failures >= ITEM_ATTEMPTS and not is_locked(error) and database_answers():
                    raise
                if self._halt.wait(self._database_backoff(failures)) or self._stopping.is_set():
                    raise Halted from error
                continue
            self.faults.succeeded(DATABASE)
            return result
