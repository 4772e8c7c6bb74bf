"""Where a submission is charged, cached per process: the answer of `AdmissionGate.charge` (the node pool a
(pool, lead platform) is charged to, and whether its workflows wait QUEUED) costs four ORM queries, about 40 %
of a submission's CPU (bench/bench_workflows.py), and changes only when the configuration or the nodes do.

Entries are keyed on the **charging epoch** (`CHARGING`, a row of access.epoch's table read in the same
query as the access epoch), which moves on, in the writing transaction, with everything the answer reads:

* a POOL, NODE_POOL or BACKEND revision (`configs.revisions.LISTENERS`): pools and their platforms, node
  pools and their quotas (the quota grid is a NODE_POOL write), a backend's quota scheduler, a new backend's
  Default node pool;
* nodes that change node pool (`membership._write`), nodes that change platforms
  (`pools.signals.membership_changed`), nodes deleted (`clusters.signals.nodes_deleted`);
* a department or project created, renamed or deleted (their quota rows go with them).

As for the access caches: nothing is cached inside a transaction, and an entry lives at most
`ACCESS_CACHE_SECONDS`, which bounds a change made behind the portal's back in SQL.
"""

from __future__ import annotations

from access import epoch
from configs.models import ConfigType
from pools.models import Pool
from quotas.services.delegation import delegates
from quotas.services.node_pools import charged_node_pool, is_managed, node_selector

CHARGING = 2  # the epoch's row id (access.epoch: 1 is the access epoch)
CONFIG_TYPES = {ConfigType.POOL, ConfigType.NODE_POOL, ConfigType.BACKEND}
_CHARGES = epoch.EpochCache(size=1024, epoch=CHARGING)  # (pool, name, platform) → (node pool, queue, selector)


def charge(pool: Pool, lead_platform: str) -> tuple[str, bool]:
    """(the node pool's name, whether the workflow waits QUEUED) for a workflow whose lead task runs on
    `pool`/`lead_platform`: from this process's cache while the charging epoch holds."""
    return charge_confined(pool, lead_platform)[:2]


def charge_confined(pool: Pool, lead_platform: str) -> tuple[str, bool, dict[str, str]]:
    """`charge` and the nodeSelector that confines the workflow's pods to that node pool (node_selector)."""
    return _CHARGES.lookup((pool.pk, pool.name, lead_platform), lambda: _decide(pool, lead_platform))


def _decide(pool: Pool, lead_platform: str) -> tuple[str, bool, dict[str, str]]:
    node_pool = charged_node_pool(pool, lead_platform)
    return node_pool.name, is_managed(node_pool) and not delegates(node_pool), node_selector(node_pool)


def changed(*args, **kwargs) -> None:
    """Something a charge depends on was written (in the caller's transaction): cached charges are stale."""
    epoch.bump(CHARGING)


def config_written(config_type: str, rows, actor) -> None:
    """configs.revisions listener."""
    if config_type in CONFIG_TYPES:
        changed()
