"""The garbage collector's first threshold, raised for every process the portal runs (`PortalConfig.ready`).

A page of a large fleet allocates about a million short-lived objects (the quota state of 120 node pools, 5,000
live workflow parts, the catalog's 100 cards). With CPython's default of 700 allocations per young collection,
enough of them survive into the older generations that a full collection, which walks every object the process
keeps (its caches: quota trees, standings, compiled platforms), ran every fourth to sixth catalog request and added
230 ms to it (docs/scale.md, "Pauses"). 10,000 lets a request's objects die young; the older generations' own
thresholds are left as they are.
"""

from __future__ import annotations

import gc


def tune(young: int) -> None:
    """Collect the youngest generation every `young` net allocations (CPython's default: 700)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old)
