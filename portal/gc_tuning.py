"""The garbage collector, tuned for processes that keep large caches (`PortalConfig.ready`, `portal.celery`).

Two settings, both measured on the fleet (docs/scale.md, "Pauses"):

- The first threshold, raised. A page of a large fleet allocates about a million short-lived objects (the quota
  state of 120 node pools, 5,000 live workflow parts, the catalog's 100 cards). With CPython's default of 700
  allocations per young collection, enough of them survive into the older generations that a full collection ran
  every fourth to sixth catalog request. 10,000 lets a request's objects die young; the older generations' own
  thresholds are left as they are.
- The long-lived caches, frozen. A web process on the fleet keeps 750,000 tracked objects in its caches (the quota
  trees and standings of 120 node pools: `quotas.services.state`, `.standing`), and every full collection walked
  them all: 330–390 ms, the pool catalog's p99. A cache that fills with such objects calls `settle_soon`; after
  the request (or Celery task) that filled it, `settle` moves every object the process holds to the permanent
  generation (`gc.freeze`), which later collections skip. It collects the young generations first (a few ms), so
  what the request left is not frozen with them. A refill's replaced values are freed by their reference counts
  (the trees and standings hold no cycles); for what cycles a settle did freeze, every `FULL_EVERY`-th settle
  unfreezes and collects everything first (the first one too: 190–350 ms on the fleet). At most one settle per
  `GC_SETTLE_SECONDS` per process; 0 turns settling off. Under gunicorn a request's `request_finished` fires
  after its response is written, so the request that settles does not wait for it.
"""

from __future__ import annotations

import gc
import time

from django.conf import settings

FULL_EVERY = 30  # every 30th settle (the first too) collects what earlier ones froze: 5 minutes apart at most

_due = False
_settled_at: float | None = None
_settles = 0  # since the process started


def tune(young: int) -> None:
    """Collect the youngest generation every `young` net allocations (CPython's default: 700)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old)


def settle_soon() -> None:
    """A long-lived cache was filled: settle after the current request or task."""
    global _due
    _due = True


def settle_if_due(interval: float) -> bool:
    """Settle if a long-lived cache was filled and the last settle is `interval` seconds old; True if it did."""
    global _due, _settled_at, _settles
    now = time.monotonic()
    if not _due or interval <= 0 or (_settled_at is not None and now - _settled_at < interval):
        return False
    _due = False
    _settled_at = now
    settle(full=_settles % FULL_EVERY == 0)
    _settles += 1
    return True


def settle(*, full: bool) -> None:
    """Freeze what the process holds (`gc.freeze`) once the young generations are collected; `full`: unfreeze and
    collect everything first, so what an earlier settle froze and is now garbage is freed."""
    if full:
        gc.unfreeze()
        gc.collect()
    else:
        gc.collect(1)
    gc.freeze()


def after_work(**kwargs) -> None:
    """`request_finished` and Celery's `task_postrun`: settle if a cache asked for it."""
    settle_if_due(settings.GC_SETTLE_SECONDS)
