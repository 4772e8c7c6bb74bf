"""Capped exponential backoff: the one rule every retry loop of the portal waits by (the watch loops, the
database-lock retry, the development supervisor)."""

from __future__ import annotations

# 2 ** 64 times any start is far above every maximum; a larger exponent would overflow the float multiply
# after a long outage (a watch that failed a thousand times in a row), so doubling stops counting here.
_LAST_DOUBLING = 64


def capped(start: float, maximum: float, attempt: int) -> float:
    """Seconds to wait before retry number `attempt` (1 = the first retry): `start`, doubling with each attempt,
    never above `maximum`."""
    return min(maximum, start * 2 ** min(_LAST_DOUBLING, max(0, attempt - 1)))
