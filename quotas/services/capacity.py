"""What a node pool's nodes hold, per quota resource: the summed allocatable of its Ready, schedulable
(not cordoned) member nodes, in scheduler units (gpu devices, cpu millicores, memory bytes).

One query whatever the number of node pools or nodes (`capacities`, `gpu_models`, or both at once:
`capacities_and_models`). The pages read them through `cached_capacities_and_models`: a fleet's 50,000 nodes
summed for every catalog were a tenth of it (docs/scale.md). Its entries hold while the inventory epoch (moved by
`clusters.inventory` where a node's readiness, cordon, allocatable or GPU product changes, or a node appears) and
the charging epoch (moved where memberships change and nodes go) stay put, and at most ACCESS_CACHE_SECONDS;
never inside a transaction, so admission, under its lock, always sums the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Sum

from access import epoch
from quotas.models import RESOURCES, NodePool, NodePoolMember

_COLUMNS = {"gpu": "node__gpu_allocatable", "cpu": "node__cpu_allocatable", "memory": "node__memory_allocatable"}


def empty() -> dict[str, int]:
    return dict.fromkeys(RESOURCES, 0)


def capacities(node_pools: Iterable[NodePool | int]) -> dict[int, dict[str, int]]:
    """node pool id → {"gpu", "cpu", "memory", "nodes"}: one query; a node pool without usable nodes has zeros."""
    return capacities_and_models(node_pools)[0]


def capacity(node_pool: NodePool | int) -> dict[str, int]:
    """{"gpu", "cpu", "memory", "nodes"} of one node pool."""
    pk = node_pool if isinstance(node_pool, int) else node_pool.pk
    return capacities([pk])[pk]


def gpu_models(node_pools: Iterable[NodePool | int]) -> dict[int, str]:
    """node pool id → the short model of its GPUs ("A100", "H100", "T4") when all its usable GPU nodes carry
    one product (a node pool chosen by GPU product, the usual case), "" otherwise. One query."""
    return capacities_and_models(node_pools)[1]


def capacities_and_models(node_pools: Iterable[NodePool | int]) -> tuple[dict[int, dict[str, int]], dict[int, str]]:
    """`capacities` and `gpu_models` in one query: the usable member nodes summed per node pool and GPU product (a
    fleet's 50,000 nodes are read once for both, not twice)."""
    ids = [p if isinstance(p, int) else p.pk for p in node_pools]
    found = {pk: {**empty(), "nodes": 0} for pk in ids}
    products: dict[int, set[str]] = {pk: set() for pk in ids}
    rows = (
        NodePoolMember.objects.filter(node_pool_id__in=ids, node__ready=True, node__unschedulable=False)
        .values("node_pool_id", "node__gpu_product")
        .annotate(nodes=Count("node_id"), **{resource: Sum(column) for resource, column in _COLUMNS.items()})
        .order_by()
    )
    for row in rows:
        totals = found[row["node_pool_id"]]
        for name in (*RESOURCES, "nodes"):
            totals[name] += row[name] or 0
        if row["node__gpu_product"]:
            products[row["node_pool_id"]].add(row["node__gpu_product"])
    models = {pk: short_model(next(iter(named))) if len(named) == 1 else "" for pk, named in products.items()}
    return found, models


def short_model(product: str) -> str:
    """`NVIDIA-A100-SXM4-80GB` → `A100`, `Tesla-T4` → `T4`, `NVIDIA-GB200` → `GB200`: the first part after the
    vendor, as people name GPUs."""
    parts = [p for p in product.replace(" ", "-").split("-") if p and p.upper() not in ("NVIDIA", "TESLA")]
    return parts[0] if parts else product


_CACHED = epoch.EpochCache(size=1024, epoch=(epoch.INVENTORY, epoch.CHARGING))  # node pool id → (capacity, model)


def cached_capacities_and_models(
    node_pools: Iterable[NodePool | int],
) -> tuple[dict[int, dict[str, int]], dict[int, str]]:
    """`capacities_and_models` from this process's cache while the epochs hold (module docstring)."""
    ids = [p if isinstance(p, int) else p.pk for p in node_pools]

    def load(keys: list) -> dict:
        caps, models = capacities_and_models(keys)
        return {pk: (caps[pk], models[pk]) for pk in caps}

    found = _CACHED.lookup_many(ids, load)
    return {pk: dict(found[pk][0]) for pk in ids}, {pk: found[pk][1] for pk in ids}
