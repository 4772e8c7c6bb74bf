"""Waiting for a condition in tests: poll it against a deadline (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# A deadline bounds how long a failing test hangs, never how fast a passing one must be. On a 2-core machine
# busy with other work, a step that takes 50 ms alone can take many seconds (docs/testing.md), so every wait
# in the suite, and every blocking call a test makes (HTTP, a child process), allows at least this long.
PATIENCE = 120.0


def wait_until(
    predicate: Callable[[], Any],
    timeout: float = PATIENCE,
    what: str = "",
    interval: float = 0.02,
    step: Callable[[], Any] | None = None,
) -> Any:
    """Poll `predicate` until it returns something truthy and return that; AssertionError after `timeout` s
    (at least PATIENCE). Between two polls: `step()` when given (work that may make the predicate true), else a
    short sleep."""
    timeout = max(timeout, PATIENCE)
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or predicate}")
        if step is not None:
            step()
        else:
            time.sleep(interval)


def drain_until(drain, predicate: Callable[[], Any], timeout: float = PATIENCE) -> Any:
    """Apply a watcher's queued events (an `EventDrain`) in the test's thread until `predicate` holds and
    return its value; AssertionError after `timeout` seconds (at least PATIENCE). Watch threads only read
    streams, so the test's transaction sees every write."""
    return wait_until(predicate, timeout, step=lambda: drain.process(timeout=0.05))
