"""Machine pools' status for automation (issue #33): the rows `GET /api/machine_pools[/NAME]` and `machinepool
list|describe` answer. Each row is `clusters.machinepools.figures` (the figures the admin shows too); a machine
pool's detail adds the platforms its nodes serve (the membership rule the pool pages use,
`pools.services.machine_pool_capacity.growth`), so a reader sees where to submit as well as what a pod needs.

The list costs constant queries whatever its length: the count, the page's rows, and the figures' four (backends,
node counts, instance types, price overrides).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from clusters.machinepools.figures import MachinePoolStatus, statuses
from clusters.models import MachinePool
from configs.errors import ConfigNotFound
from pools.models import Pool
from pools.services.machine_pool_capacity import growth


def all_machine_pools() -> QuerySet[MachinePool]:
    """Every machine pool, by name (the figures read the backends in one query: faster than a join per row)."""
    return MachinePool.objects.order_by("name")


@dataclass
class Page:
    rows: list[MachinePoolStatus]
    count: int
    offset: int
    limit: int

    @property
    def more_entries(self) -> bool:
        return self.offset + len(self.rows) < self.count

    def as_dict(self) -> dict:
        return {
            "machine_pools": [row.as_dict() for row in self.rows],
            "count": self.count,
            "offset": self.offset,
            "limit": self.limit,
            "more_entries": self.more_entries,
        }


def page(rows: QuerySet[MachinePool], offset: int = 0, limit: int | None = None) -> Page:
    """`rows` (already filtered) from `offset`, at most `limit` of them (None: all), with their figures."""
    count = rows.count()
    chosen = list(rows[offset : offset + limit] if limit is not None else rows[offset:])
    found = statuses(chosen)
    return Page([found[pool.pk] for pool in chosen], count, offset, limit if limit is not None else count)


def machine_pool(name: str) -> MachinePool:
    row = all_machine_pools().filter(name=name).first()
    if row is None:
        known = ", ".join(MachinePool.objects.order_by("name").values_list("name", flat=True)[:50]) or "none defined"
        raise ConfigNotFound(f"no machine pool by this name (machine pools: {known})", field="name", value=name)
    return row


def detail(name: str) -> dict:
    """One machine pool's status, and the platforms (`pool/platform`) its nodes serve."""
    row = machine_pool(name)
    status = statuses([row])[row.pk]
    return {**status.as_dict(), "platforms": served_platforms(row)}


def served_platforms(row: MachinePool) -> list[dict]:
    """The platforms of the backend's pools that a node of this machine pool would serve."""
    pools = list(Pool.objects.filter(backend_id=row.backend_id).order_by("name").values_list("pk", "name"))
    grown = growth([pk for pk, _ in pools], {row.backend_id})
    return [
        {"pool": pool_name, "platform": platform}
        for pk, pool_name in pools
        for platform, served in sorted(grown[pk].platforms.items())
        if any(figures.name == row.name for figures in served.machine_pools)
    ]
