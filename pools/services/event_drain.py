"""The loop both long-running watchers share: watch threads queue items, the caller's thread applies them.

Database work then happens in one thread, in order. Subclasses say what a queued item does (`_apply`) and
what runs between items (`_tick`: relists, periodic jobs).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections

from portal.dblock import retry_locked

log = logging.getLogger(__name__)
BACKOFF_START, BACKOFF_MAX = 1.0, 60.0  # seconds before a watch reconnects: doubling, up to the maximum


class EventDrain:
    until_timeout = 5.0  # default wait of `process_until`
    backoff_max = BACKOFF_MAX
    errors = 0  # items whose applying failed (logged, skipped)

    def _backoff(self, failures: int) -> float:
        """How long a watch thread waits after its `failures`-th failure in a row."""
        return min(self.backoff_max, BACKOFF_START * 2 ** max(0, failures - 1))

    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()
        self._stopping = threading.Event()

    def run(self, stop: threading.Event) -> None:
        """The long-running loop of the management command."""
        while not stop.is_set():
            self.process(timeout=1.0)
            close_old_connections()

    def process(self, timeout: float = 0.0) -> int:
        """Apply queued items (waiting up to `timeout` for the first) and run `_tick` between them."""
        applied = 0
        deadline = time.monotonic() + timeout
        while True:
            self._tick()
            try:
                item = self.events.get(timeout=max(0.0, min(deadline - time.monotonic(), 0.2)))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return applied
                continue
            applied += self._handle(item)
            deadline = time.monotonic()  # after the first item, drain what is already queued

    def process_until(self, predicate: Callable[[], object], timeout: float | None = None) -> object:
        """Apply items until `predicate()` is truthy; AssertionError after `timeout` seconds (tests)."""
        timeout = self.until_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s: {predicate}")
            self.process(timeout=0.05)

    def _tick(self) -> None:
        """Work due between items."""

    def _handle(self, item: tuple) -> int:
        try:  # applying is idempotent (guarded updates): a write that lost SQLite's lock is tried again
            return retry_locked(lambda: self._apply(item), f"{type(self).__name__}: applying {item[0]}")
        except Exception:  # noqa: BLE001 - one bad event (or a database hiccup) must not stop the watcher
            self.errors += 1
            log.exception("%s: applying %s failed", type(self).__name__, item[0])
            return 0

    def _apply(self, item: tuple) -> int:
        raise NotImplementedError
