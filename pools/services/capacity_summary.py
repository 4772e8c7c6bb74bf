"""The capacity of every pool and platform summed ahead of the request, for the pages that list every pool.

Summing a fleet's 50,000 nodes over their 193,400 memberships took the catalog 1.6 s a request (docs/scale.md).
A periodic job (`pools.tasks.summarize_capacity`, every CAPACITY_SUMMARY_SECONDS) sums them once into one row per
pool (`CapacitySummary`), which the catalog and the admin dashboard read by key. Freshness is bounded: a summary
older than CAPACITY_SUMMARY_MAX_AGE (the job stopped, or never ran: `make dev` before its first tick, the tests),
or a pool without one (created since, or whose backend's nodes changed pools: `forget`, called where memberships
are written, so a first inventory sync or a relabelled node is never shown as the nodes were before), is summed
live for that request, and the pages say when the figures they show were summed. Capacity is what the nodes
hold, never what admission decides on: admission reads the nodes. The summary also keeps what the catalog prints
of each pool's machine pools (pools.services.machine_pool_capacity: their nodes and GPUs now and at maximum, and
cost), summed by the same job: their status was a fifth of a fleet's catalog (docs/scale.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from pools.models import CapacitySummary, Platform, Pool
from pools.services.capacity import Figures, platform_totals, pool_totals
from pools.services.machine_pool_capacity import PoolGrowthLines, growth


@dataclass
class Totals:
    pools: dict[int, Figures]  # pool id → its member nodes, each once
    platforms: dict[int, Figures]  # platform id → its member nodes
    products: dict[int, set[str]]  # platform id → the GPU products among its nodes ("" for none)
    as_of: datetime  # when the oldest figure shown was summed
    growth: dict[int, PoolGrowthLines] = field(default_factory=dict)  # pool id → its machine pools (if asked)


def refresh() -> int:
    """Sum every pool's and platform's capacity now and keep it (four queries, the machine pools' five, and one
    upsert): the number of pools summarized."""
    started = timezone.now()  # stamped before the sums: a summary is never said to be newer than what it read
    backends = dict(Pool.objects.values_list("pk", "backend_id"))
    ids = list(backends)
    pools = pool_totals(ids)
    grown = growth(ids, set(backends.values()))
    platforms, products = platform_totals(ids)
    owner = dict(Platform.objects.filter(pool_id__in=ids).values_list("pk", "pool_id"))
    per_pool: dict[int, dict[str, dict]] = {pk: {} for pk in ids}
    for platform_id, figures in platforms.items():
        if platform_id in owner:
            entry = {"figures": figures.as_dict(), "products": sorted(products.get(platform_id, ()))}
            per_pool[owner[platform_id]][str(platform_id)] = entry
    rows = [
        CapacitySummary(
            pool_id=pk,
            figures=pools[pk].as_dict(),
            platforms=per_pool[pk],
            growth=PoolGrowthLines.of(grown[pk]).as_dict(),
            computed_at=started,
        )
        for pk in ids
    ]
    try:
        CapacitySummary.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["pool"],
            update_fields=["figures", "platforms", "growth", "computed_at"],
        )
    except IntegrityError:  # a pool deleted while it was summed: the next run sums the pools there are then
        return 0
    return len(rows)


def forget(backend_ids: Iterable[int]) -> None:
    """Drop the summaries of the backends' pools (their nodes changed pools, in the caller's transaction): the pages
    sum those pools for the request until the job's next run."""
    CapacitySummary.objects.filter(pool__backend_id__in=list(backend_ids)).delete()


def totals(pool_ids: list[int], *, platforms: bool = True, backend_ids: set[int] | None = None) -> Totals:
    """The pools' capacity, their platforms' unless `platforms` is false, and given the pools' `backend_ids` what the
    catalog prints of their machine pools: from their summaries while those are fresh (one query), the rest summed
    now (one more for the pools, two for the platforms, the machine pools' one to five)."""
    machine_pools = backend_ids is not None
    now = timezone.now()
    fresh_after = now - timedelta(seconds=settings.CAPACITY_SUMMARY_MAX_AGE)
    found = Totals({}, {}, {}, now)
    kept = CapacitySummary.objects.filter(pool_id__in=pool_ids, computed_at__gte=fresh_after)
    if not machine_pools:
        kept = kept.defer("growth")
    for summary in kept:
        found.pools[summary.pool_id] = Figures.from_dict(summary.figures)
        for platform_id, entry in summary.platforms.items():
            found.platforms[int(platform_id)] = Figures.from_dict(entry["figures"])
            found.products[int(platform_id)] = set(entry["products"])
        if machine_pools:
            found.growth[summary.pool_id] = PoolGrowthLines.from_dict(summary.growth)
        found.as_of = min(found.as_of, summary.computed_at)
    missing = [pk for pk in pool_ids if pk not in found.pools]
    if missing:
        found.pools.update(pool_totals(missing))
        if platforms:
            per_platform, products = platform_totals(missing)
            found.platforms.update(per_platform)
            found.products.update(products)
        if machine_pools:
            found.growth.update({pk: PoolGrowthLines.of(g) for pk, g in growth(missing, backend_ids).items()})
    return found
