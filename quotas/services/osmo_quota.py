"""OSMO's pool quota (`GET /api/pool_quota`, `osmo pool list`) from the quota model (docs/differences-from-osmo.md).

OSMO gives each pool a GPU guarantee of its own. Here quotas belong to teams in node pools, and an OSMO pool is a
door whose platforms are charged to node pools (docs/quotas.md). So, per OSMO pool:

- its node pools: those its platforms are charged to (`charged_node_pools`, the same rule as
  `node_pools.charged_node_pool`, for every pool and platform at once);
- unmanaged (no quota set in any of them): OSMO's own figures stay (the pool's `resources.gpu.guarantee`, or the
  capacity; `pools.services.pool_quota`);
- managed: `quota_limit` = the deserved GPUs, in those node pools, of the caller's projects (the projects whose
  role `osmo-<project>` the caller holds), or of every project when the caller belongs to none (an operator's
  view); `quota_used` = the GPUs those projects' admitted, unfinished workflows hold there (what `quota show`
  calls allocated). `quota_free` = limit − used (negative while borrowing above the guarantee, as OSMO would).

Queries: a constant number whatever the number of pools, platforms, node pools or projects.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from pools.models import NodeMembership, Platform, Pool
from pools.services.pool_quota import QuotaFigures
from quotas.models import NodePool, SelectorKind
from quotas.services import node_pools, state
from teams.services import member_projects


def charged_node_pools(pools: list[Pool]) -> dict[tuple[int, str], NodePool]:
    """(pool id, platform name) → the node pool a workflow there is charged to (as
    `node_pools.charged_node_pool`). Four queries at most."""
    platforms = list(Platform.objects.filter(pool__in=pools).values_list("pool_id", "name"))
    by_pk = {pool.pk: pool for pool in pools}
    named: dict[tuple[int, str, str], NodePool] = {}
    candidates = NodePool.objects.filter(
        selector_kind__in=(SelectorKind.PLATFORM, SelectorKind.DEFAULT),
        backend_id__in={pool.backend_id for pool in pools},
    ).order_by("name")
    defaults: dict[int, NodePool] = {}
    for node_pool in candidates:
        if node_pool.selector_kind == SelectorKind.DEFAULT:
            defaults[node_pool.backend_id] = node_pool
        else:
            named.setdefault((node_pool.backend_id, node_pool.pool_name, node_pool.platform_name), node_pool)
    most: dict[tuple[int, str], tuple[int, str, int]] = {}  # (pool, platform) → (nodes, name, node pool id)
    member = "node__node_pool_member__node_pool"
    held = (
        NodeMembership.objects.filter(pool__in=pools, node__node_pool_member__isnull=False)
        .values("pool_id", "platform__name", f"{member}_id", f"{member}__name")
        .annotate(nodes=Count("node_id", distinct=True))
    )
    for row in held:
        key, candidate = (row["pool_id"], row["platform__name"]), (row["nodes"], row[f"{member}__name"])
        best = most.get(key)
        if best is None or (-candidate[0], candidate[1]) < (-best[0], best[1]):
            most[key] = (*candidate, row[f"{member}_id"])
    winners = {value[2] for value in most.values()}
    fetched = {p.pk: p for p in NodePool.objects.filter(pk__in=winners)} if winners else {}
    charged = {}
    for pool_id, platform in platforms:
        pool = by_pk[pool_id]
        node_pool = named.get((pool.backend_id, pool.name, platform))
        if node_pool is None and (pool_id, platform) in most:
            node_pool = fetched[most[(pool_id, platform)][2]]
        if node_pool is None:
            node_pool = defaults.get(pool.backend_id)
        if node_pool is not None:
            charged[(pool_id, platform)] = node_pool
    return charged


def quota_figures(pool_names: list[str] | None, who) -> dict[str, QuotaFigures]:
    """Per OSMO pool charged to a managed node pool, its quota limit and use (GPUs) for `who`; pools charged
    only to unmanaged node pools are left out (OSMO's own figures stand)."""
    pools = Pool.objects.all() if pool_names is None else Pool.objects.filter(name__in=pool_names)
    pools = list(pools)
    charged = charged_node_pools(pools)
    of_pool: dict[int, dict[int, NodePool]] = defaultdict(dict)
    for (pool_id, _), node_pool in charged.items():
        of_pool[pool_id][node_pool.pk] = node_pool
    every = {pk: node_pool for found in of_pool.values() for pk, node_pool in found.items()}
    managed = node_pools.managed_ids(list(every.values()))
    if not managed:
        return {}
    live = state.states([every[pk] for pk in sorted(managed)])
    mine = set(member_projects(who)) if who is not None else set()
    per_node_pool: dict[int, tuple[int, int]] = {}
    for pk, pool_state in live.items():
        rows = [row for row in pool_state.project_rows() if row["resource"] == "gpu"]
        counted = [row for row in rows if row["project"] in mine] if mine else rows
        per_node_pool[pk] = (sum(r["deserved"] for r in counted), sum(r["allocated"] for r in counted))
    figures = {}
    for pool in pools:
        charged_to = [pk for pk in of_pool.get(pool.pk, {}) if pk in managed]
        if charged_to:
            figures[pool.name] = QuotaFigures(
                limit=sum(per_node_pool[pk][0] for pk in charged_to),
                used=sum(per_node_pool[pk][1] for pk in charged_to),
            )
    return figures
