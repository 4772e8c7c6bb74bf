"""OSMO's `GET /api/pool_quota` answer (what `osmo pool list` prints): GPU quota and capacity per pool.

Pools are grouped in node sets: pools whose nodes are exactly the same (same backend) share one capacity, so
the client prints it once and marks the others "(shared)". Per pool (all figures GPUs):

- quota_limit: the pool's GPU guarantee (`resources.gpu.guarantee`), or the node set's capacity when it has
  none (-1, unset), as OSMO;
- quota_used / total_usage: GPUs requested by the pool's RUNNING tasks of HIGH and NORMAL priority / of any
  priority; the caller (the workflows app, which owns tasks) passes them in as `usage`;
- a pool named in `quotas` (`QuotaFigures`) takes its quota_limit and quota_used from there instead: the team
  quotas of the node pools it is charged to (the quotas app decides them: quotas.services.osmo_quota);
- quota_free: quota_limit - quota_used;
- total_capacity / total_free: the node set's allocatable GPUs / allocatable minus what every non-terminal pod
  on those nodes requests (never below zero per node).

`resource_sum` adds the quota figures of every pool listed and the capacity of every node of those pools once.
Figures are strings, as OSMO answers them. Queries: three, whatever the number of pools and nodes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Prefetch

from pools.models import NodeMembership, Platform, Pool

USAGE_KEYS = ("quota_used", "quota_free", "quota_limit", "total_usage", "total_capacity", "total_free")


@dataclass(frozen=True)
class GpuUsage:
    """GPUs that running tasks of one pool request: of HIGH/NORMAL priority (`quota`), of any (`total`)."""

    quota: int = 0
    total: int = 0


@dataclass(frozen=True)
class QuotaFigures:
    """A pool's GPU quota from elsewhere than its own guarantee: the limit, and what counts against it."""

    limit: int
    used: int


def pool_quota(
    names: list[str] | None, usage: dict[str, GpuUsage], quotas: dict[str, QuotaFigures] | None = None
) -> dict:
    """The answer for the pools `names` (every pool when None; unknown names are left out, as OSMO)."""
    quotas = quotas or {}
    pools = _pools(names)
    # One read of the memberships with their nodes' GPUs: per pool its node ids, per node (allocatable, free).
    node_ids: dict[str, set[int]] = defaultdict(set)
    gpus: dict[int, tuple[int, int]] = {}
    rows = NodeMembership.objects.filter(pool__in=[pool.pk for pool in pools]).values_list(
        "pool__name", "node_id", "node__gpu_allocatable", "node__gpu_used"
    )
    for pool_name, node_id, allocatable, used in rows:
        node_ids[pool_name].add(node_id)
        gpus[node_id] = (allocatable, max(0, allocatable - used))
    members = {name: frozenset(ids) for name, ids in node_ids.items()}

    node_sets: dict[tuple, list[Pool]] = {}
    for pool in pools:  # by name: node sets in the order of their first pool, as OSMO
        node_sets.setdefault((pool.backend.name, members.get(pool.name, frozenset())), []).append(pool)
    sums = dict.fromkeys(USAGE_KEYS, 0)
    answer = []
    for (_, nodes), grouped in node_sets.items():
        capacity = sum(gpus[node][0] for node in nodes)
        free = sum(gpus[node][1] for node in nodes)
        rows = []
        for pool in grouped:
            figures = _pool_figures(pool, usage.get(pool.name, GpuUsage()), capacity, free, quotas.get(pool.name))
            for key in ("quota_used", "quota_free", "quota_limit", "total_usage"):
                sums[key] += figures[key]
            rows.append({**_pool_row(pool), "resource_usage": {key: str(value) for key, value in figures.items()}})
        answer.append({"pools": rows})
    every_node = set().union(*members.values()) if members else set()
    sums["total_capacity"] = sum(gpus[node][0] for node in every_node)
    sums["total_free"] = sum(gpus[node][1] for node in every_node)
    return {"node_sets": answer, "resource_sum": {key: str(value) for key, value in sums.items()}}


def _pools(names: list[str] | None) -> list[Pool]:
    query = Pool.objects.select_related("backend").prefetch_related(
        Prefetch("platforms", queryset=Platform.objects.order_by("name"))
    )
    if names is not None:
        query = query.filter(name__in=names)
    return list(query.order_by("name"))


def _pool_figures(pool: Pool, usage: GpuUsage, capacity: int, free: int, quota: QuotaFigures | None) -> dict[str, int]:
    guarantee = pool.gpu_guarantee
    limit = capacity if guarantee is None or guarantee == -1 else guarantee
    used = usage.quota
    if quota is not None:
        limit, used = quota.limit, quota.used
    return {
        "quota_used": used,
        "quota_free": limit - used,
        "quota_limit": limit,
        "total_usage": usage.total,
        "total_capacity": capacity,
        "total_free": free,
    }


def _pool_row(pool: Pool) -> dict:
    """OSMO's `PoolMinimal` fields the portal has (the client reads name, description and status)."""
    return {
        "name": pool.name,
        "description": pool.description,
        "status": pool.status,
        "backend": pool.backend.name,
        "default_platform": pool.default_platform or None,
        "enable_maintenance": pool.enable_maintenance,
        "default_exec_timeout": pool.default_exec_timeout,
        "default_queue_timeout": pool.default_queue_timeout,
        "max_exec_timeout": pool.max_exec_timeout,
        "max_queue_timeout": pool.max_queue_timeout,
        "resources": {
            "gpu": {
                "guarantee": _or_unset(pool.gpu_guarantee),
                "maximum": _or_unset(pool.gpu_maximum),
                "weight": pool.gpu_weight if pool.gpu_weight is not None else 1,
            }
        },
        "platforms": {
            platform.name: {
                "description": platform.description,
                "host_network_allowed": platform.host_network_allowed,
                "privileged_allowed": platform.privileged_allowed,
                "allowed_mounts": platform.allowed_mounts,
            }
            for platform in pool.platforms.all()
        },
    }


def _or_unset(value: int | None) -> int:
    return -1 if value is None else value
