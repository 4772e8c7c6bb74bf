"""Waiting for a condition in tests: poll it against a deadline (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "", interval: float = 0.02) -> Any:
    """Poll `predicate` until it returns something truthy and return that; AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or predicate}")
        time.sleep(interval)
