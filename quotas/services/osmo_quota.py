"""OSMO's pool quota (`GET /api/pool_quota`, `osmo pool list`) from the quota model (docs/differences-from-osmo.md).

OSMO gives each pool a GPU guarantee of its own. Here quotas belong to teams in node pools, and an OSMO pool is a
door whose platforms are charged to node pools (docs/quotas.md). So, per OSMO pool:

- its node pools: those its platforms are charged to (`node_pools.charged_node_pools`, the rule of
  `node_pools.charged_node_pool` for every pool and platform at once);
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

from pools.models import Pool
from pools.services.pool_quota import QuotaFigures
from quotas.models import NodePool
from quotas.services import node_pools, state
from teams.services import member_projects


def quota_figures(pool_names: list[str] | None, who) -> dict[str, QuotaFigures]:
    """Per OSMO pool charged to a managed node pool, its quota limit and use (GPUs) for `who`; pools charged
    only to unmanaged node pools are left out (OSMO's own figures stand)."""
    pools = Pool.objects.all() if pool_names is None else Pool.objects.filter(name__in=pool_names)
    pools = list(pools)
    charged = node_pools.charged_node_pools(pools)
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
