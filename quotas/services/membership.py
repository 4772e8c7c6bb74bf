"""Which node pool each node is in: exactly one, so no node is counted twice in a quota calculation.

Claims, in order: label node pools (the node carries `key=value`), then platform node pools (the node is a
member of that OSMO platform: pools' `NodeMembership`), ties by node-pool name; every node left goes to its
backend's Default node pool. Recomputed when nodes change (`clusters.signals.nodes_changed`), when
platform membership changes (`pools.signals.membership_changed`, pools and platforms deleted) and when
node pools change (the NODE_POOL handler). Writes are diffs; queries are constant in the number of nodes:
the backend's node pools, its nodes, their platform memberships, the current members, then the writes.
"""

from __future__ import annotations

from collections.abc import Iterable

from clusters.models import Node
from pools.models import NodeMembership
from portal.generation import GenerationCache
from quotas.models import NodePool, NodePoolMember, SelectorKind
from quotas.services import charge_cache, node_labels
from quotas.services.delegation import schedule_sync
from quotas.services.node_pools import ensure_default

BATCH = 1000
_NODE_POOLS = GenerationCache()  # backend id -> its node pools, under the config generation they were read at


def recompute(
    backend_id: int,
    node_ids: Iterable[int] | None = None,
    *,
    labels: dict[int, dict] | None = None,
    previous: dict[int, dict] | None = None,
    platform_change: bool = False,
    generation: str | None = None,
) -> tuple[int, int]:
    """Assign the backend's nodes (only `node_ids` when given) to their node pools; (assigned, moved).

    `labels` (node id -> labels, nodes of this backend the caller has just written) saves reading them back.
    `previous` (node id -> former labels, for nodes that existed; with `labels`): a node none of whose labels
    that a label node pool reads changed keeps its node pool (platform moves come as `platform_change`).
    `platform_change`: only the nodes' platform memberships changed, which moves no node unless the backend
    has platform node pools: then nothing more is read.
    `generation` (the config generation read before, portal.generation): the backend's node pools come
    from the cache while nothing they are read from was written since.
    """
    node_pools = _node_pools(backend_id, generation)
    labelled = sorted((p for p in node_pools if p.selector_kind == SelectorKind.LABEL), key=lambda p: p.name)
    by_platform = sorted((p for p in node_pools if p.selector_kind == SelectorKind.PLATFORM), key=lambda p: p.name)
    if platform_change and not by_platform:
        return (0, 0)
    default = next((p for p in node_pools if p.selector_kind == SelectorKind.DEFAULT), None)
    if default is None:  # a backend created before this app, or rows written by hand
        default = ensure_default(backend_id)
    if labels is not None and previous is not None:
        keys = {pool.label_key for pool in labelled}
        labels = {
            node_id: node_labels
            for node_id, node_labels in labels.items()
            if node_id not in previous or _label_moved(previous[node_id] or {}, node_labels or {}, keys)
        }
    if labels is not None:
        if not labels:
            return (0, 0)
        node_scope = list(labels)
    else:
        nodes = Node.objects.filter(backend_id=backend_id)
        if node_ids is not None:
            node_ids = list(node_ids)
            if not node_ids:
                return (0, 0)
            nodes = nodes.filter(pk__in=node_ids)
        labels = dict(nodes.values_list("pk", "labels"))
        node_scope = nodes.values("pk")
    platforms: dict[int, set[tuple[str, str]]] = {}
    if by_platform:
        memberships = NodeMembership.objects.filter(node__in=node_scope).values_list(
            "node_id", "pool__name", "platform__name"
        )
        for node_id, pool, platform in memberships:
            platforms.setdefault(node_id, set()).add((pool, platform))
    wanted = {
        node_id: claim(node_labels or {}, platforms.get(node_id, ()), labelled, by_platform, default)
        for node_id, node_labels in labels.items()
    }
    written = _write(wanted)
    if any(written):  # a delegating backend's scheduler shards or flavors select nodes by the node pool
        schedule_sync(backend_id)
        node_labels.schedule(backend_id)  # confined pods select the node-pool label (docs/quotas.md)
    return written


def _node_pools(backend_id: int, generation: str | None) -> list[NodePool]:
    """The backend's node pools (callers only read them); cached under `generation` once it has its Default."""
    node_pools = _NODE_POOLS.get(backend_id, generation)
    if node_pools is None:
        node_pools = list(NodePool.objects.filter(backend_id=backend_id))
        if any(p.selector_kind == SelectorKind.DEFAULT for p in node_pools):
            _NODE_POOLS.put(backend_id, generation, node_pools)
    return node_pools


def _label_moved(old: dict, new: dict, keys: set[str]) -> bool:
    return any((key in old, old.get(key)) != (key in new, new.get(key)) for key in keys)


def claim(labels: dict, platforms, labelled: list[NodePool], by_platform: list[NodePool], default: NodePool) -> int:
    for pool in labelled:
        if labels.get(pool.label_key) == pool.label_value and pool.label_key in labels:
            return pool.pk
    for pool in by_platform:
        if (pool.pool_name, pool.platform_name) in platforms:
            return pool.pk
    return default.pk


def _write(wanted: dict[int, int]) -> tuple[int, int]:
    current = _current(list(wanted))
    fresh = [NodePoolMember(node_id=node, node_pool_id=pool) for node, pool in wanted.items() if node not in current]
    moved: dict[int, list[int]] = {}
    for node, pool in wanted.items():
        if node in current and current[node] != pool:
            moved.setdefault(pool, []).append(node)
    NodePoolMember.objects.bulk_create(fresh, batch_size=BATCH)
    for pool, nodes in moved.items():  # one update per destination node pool
        for start in range(0, len(nodes), BATCH):
            NodePoolMember.objects.filter(node_id__in=nodes[start : start + BATCH]).update(node_pool_id=pool)
    if fresh or moved:  # which node pool a platform is charged to may follow its nodes
        charge_cache.changed()
    return len(fresh), sum(len(nodes) for nodes in moved.values())


def _current(node_ids: list[int]) -> dict[int, int]:
    current = {}
    for start in range(0, len(node_ids), BATCH):
        chunk = node_ids[start : start + BATCH]
        current.update(NodePoolMember.objects.filter(node_id__in=chunk).values_list("node_id", "node_pool_id"))
    return current


def recompute_backends(backend_ids: Iterable[int]) -> None:
    for backend_id in sorted(set(backend_ids)):
        recompute(backend_id)


def members_of(node_pool: NodePool) -> list[str]:
    """The node names in a node pool, sorted."""
    return sorted(NodePoolMember.objects.filter(node_pool=node_pool).values_list("node__name", flat=True))
