"""What a node pool's nodes hold, per quota resource: the summed allocatable of its Ready, schedulable
(not cordoned) member nodes, in scheduler units (gpu devices, cpu millicores, memory bytes).

One query whatever the number of node pools or nodes (`capacities`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Sum

from quotas.models import RESOURCES, NodePool, NodePoolMember

_COLUMNS = {"gpu": "node__gpu_allocatable", "cpu": "node__cpu_allocatable", "memory": "node__memory_allocatable"}


def empty() -> dict[str, int]:
    return dict.fromkeys(RESOURCES, 0)


def capacities(node_pools: Iterable[NodePool | int]) -> dict[int, dict[str, int]]:
    """node pool id → {"gpu", "cpu", "memory", "nodes"}: one query; a node pool without usable nodes has zeros."""
    ids = [p if isinstance(p, int) else p.pk for p in node_pools]
    found = {pk: {**empty(), "nodes": 0} for pk in ids}
    rows = (
        NodePoolMember.objects.filter(node_pool_id__in=ids, node__ready=True, node__unschedulable=False)
        .values("node_pool_id")
        .annotate(nodes=Count("node_id"), **{resource: Sum(column) for resource, column in _COLUMNS.items()})
    )
    for row in rows:
        found[row["node_pool_id"]] = {**{r: row[r] or 0 for r in RESOURCES}, "nodes": row["nodes"]}
    return found


def capacity(node_pool: NodePool | int) -> dict[str, int]:
    """{"gpu", "cpu", "memory", "nodes"} of one node pool."""
    pk = node_pool if isinstance(node_pool, int) else node_pool.pk
    return capacities([pk])[pk]
