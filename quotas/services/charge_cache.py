"""Where a submission is charged, cached per process: the answer of `AdmissionGate.charge` (the node pool a
(pool, platform) is charged to, whether the tasks charged there wait QUEUED, and its nodeSelector) costs four
ORM queries, about 40 % of a submission's CPU (bench/bench_workflows.py), and changes only when the
configuration or the nodes do.

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
from quotas.models import NodePool, SelectorKind
from quotas.services.delegation import delegates
from quotas.services.node_pools import charged_node_pool, default_node_pool, is_managed, node_selector

CHARGING = epoch.CHARGING  # the epoch's row id (access.epoch: 1 is the access epoch)
CONFIG_TYPES = {ConfigType.POOL, ConfigType.NODE_POOL, ConfigType.BACKEND}
_CHARGES = epoch.EpochCache(size=1024, epoch=CHARGING)  # (pool, name, platform) → (node pool, queue, selector)


def charge(pool: Pool, platform: str) -> tuple[str, bool, dict[str, str]]:
    """(the node pool's name, whether its part waits QUEUED, the node pool's nodeSelector) for the tasks of a
    workflow running on `pool`/`platform`: from this process's cache while the charging epoch holds."""
    return _CHARGES.lookup((pool.pk, pool.name, platform), lambda: _decide(pool, platform))


def _decide(pool: Pool, platform: str) -> tuple[str, bool, dict[str, str]]:
    node_pool = charged_node_pool(pool, platform)
    return node_pool.name, is_managed(node_pool) and not delegates(node_pool), node_selector(node_pool)


def changed(*args, **kwargs) -> None:
    """Something a charge depends on was written (in the caller's transaction): cached charges are stale."""
    epoch.bump(CHARGING)


def config_written(config_type: str, rows, actor) -> None:
    """configs.revisions listener."""
    if config_type in CONFIG_TYPES:
        changed()


def machine_pool_node_labels(backend_id: int):
    """The rule for the node-pool label a machine pool of the backend needs on its new nodes to take the pods
    confined to their node pool (clusters.machinepools.node_labels): none when a label node pool claims them by
    the machine pool's own labels, else the Default's `pool-portal/node-pool` (a machine pool's nodes are never a
    platform node pool's until they exist: then quotas.services.node_labels patches the label the claim says)."""
    claims, default_selector = _MACHINE_POOL_CLAIMS.lookup(backend_id, lambda: _claims(backend_id))

    def added(labels: dict[str, str]) -> dict[str, str]:
        if any(labels.get(key) == value for key, value in claims):
            return {}
        return dict(default_selector)

    return added


def _claims(backend_id: int) -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
    label_pools = NodePool.objects.filter(backend_id=backend_id, selector_kind=SelectorKind.LABEL)
    return tuple(label_pools.values_list("label_key", "label_value")), node_selector(default_node_pool(backend_id))


# backend id → (its label node pools' labels, its Default's selector): moved by NODE_POOL and BACKEND revisions
_MACHINE_POOL_CLAIMS = epoch.EpochCache(size=256, epoch=CHARGING)
