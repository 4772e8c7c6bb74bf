"""Node pools as the rest of the portal asks about them: a backend's Default, which node pool a workflow is
charged to, the nodeSelector that lands pods in a node pool, and whether a node pool is managed.

Charging (docs/quotas.md): a workflow is charged to the node pool of its lead task's (pool, platform): the
platform node pool naming that platform if any (ties by name), else the node pool holding most of that
platform's member nodes (ties by name), else the backend's Default.

Managed: a node pool where some quota row guarantees something (deserved > 0) or caps something (a limit).
An unmanaged node pool admits its workflows at once, as the portal did before quotas.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Q

from access import epoch
from access.services.audit import SYSTEM
from clusters.models import Backend
from clusters.schedulers.kueue import NODE_POOL_LABEL  # one key for Kueue's flavors and the portal's confinement
from clusters.schedulers.tree import object_name
from configs import store
from configs.models import ConfigType
from configs.revisions import Actor
from pools.models import NodeMembership, Platform, Pool
from quotas.models import NodePool, Quota, SelectorKind, default_name


def default_node_pool(backend: Backend | int) -> NodePool:
    """The backend's Default node pool (created if it is somehow missing)."""
    backend_id = backend if isinstance(backend, int) else backend.pk
    found = NodePool.objects.filter(backend_id=backend_id, selector_kind=SelectorKind.DEFAULT).first()
    return found or ensure_default(backend_id)


def ensure_default(backend: Backend | int, actor: Actor = SYSTEM) -> NodePool:
    """Create the backend's Default node pool through the config store (one NODE_POOL revision), unless it
    exists. Called when a backend is created (quotas.receivers) and by the data migration's successors."""
    backend = backend if isinstance(backend, Backend) else Backend.objects.get(pk=backend)
    found = NodePool.objects.filter(backend=backend, selector_kind=SelectorKind.DEFAULT).first()
    if found is not None:
        return found
    name = default_name(backend.name)
    store.apply(
        ConfigType.NODE_POOL,
        name,
        {"backend": backend.name, "selector": {}},
        actor,
        description=f"the Default node pool of backend {backend.name}",
    )
    return NodePool.objects.get(name=name)


def node_selector(node_pool: NodePool) -> dict[str, str]:
    """What every pod charged to the node pool carries to stay on its nodes (docs/quotas.md, "Confinement"):
    `{key: value}` for a label node pool; for the Default and platform node pools, whose membership no admin
    label says, the portal's own `pool-portal/node-pool: <node pool>`, which it keeps on each node of the
    backend (quotas.services.node_labels). A node not labelled yet takes no such pod: it waits, never escapes."""
    if node_pool.selector_kind == SelectorKind.LABEL:
        return {node_pool.label_key: node_pool.label_value}
    return {NODE_POOL_LABEL: object_name(node_pool.name)}


def managed_filter() -> Q:
    """Quota rows that make their node pool managed."""
    return Q(deserved__gt=0) | Q(limit__isnull=False)


def is_managed(node_pool: NodePool) -> bool:
    return Quota.objects.filter(managed_filter(), node_pool=node_pool).exists()


def managed_ids(node_pools) -> set[int]:
    """The managed ones among `node_pools` (a queryset or list): one query."""
    ids = [p.pk for p in node_pools] if isinstance(node_pools, list) else node_pools.values("pk")
    return set(Quota.objects.filter(managed_filter(), node_pool_id__in=ids).values_list("node_pool_id", flat=True))


def charged_node_pool(pool: Pool, platform_name: str) -> NodePool:
    """The node pool a workflow on `pool`/`platform_name` (its lead task's) is charged to. Two queries at most
    before the Default."""
    named = (
        NodePool.objects.filter(
            backend_id=pool.backend_id,
            selector_kind=SelectorKind.PLATFORM,
            pool_name=pool.name,
            platform_name=platform_name,
        )
        .order_by("name")
        .first()
    )
    if named is not None:
        return named
    most = (  # the filter's join is the one counted: members on this pool's platform only
        NodePool.objects.filter(
            members__node__memberships__pool_id=pool.pk, members__node__memberships__platform__name=platform_name
        )
        .annotate(member_count=Count("members__node_id", distinct=True))
        .order_by("-member_count", "name")
        .first()
    )
    if most is not None:
        return most
    return default_node_pool(pool.backend_id)


# pool id → {platform name: the node pool its workflows are charged to}, per process under the charging epoch, which
# moves with everything the rule reads (quotas.services.charge_cache): the catalog asks it for every pool
_CHARGED = epoch.EpochCache(size=4096, epoch=epoch.CHARGING)


def charged_node_pools(pools: Iterable[Pool]) -> dict[tuple[int, str], NodePool]:
    """(pool id, platform name) → the node pool a workflow there is charged to: `charged_node_pool`'s rule for every
    pool and platform at once. Three queries, none while the charging epoch holds (outside a transaction:
    a save's checks read the rows)."""
    by_pk = {pool.pk: pool for pool in pools}
    found = _CHARGED.lookup_many(by_pk, lambda ids: _charged_by_pool([by_pk[pk] for pk in ids]))
    return {(pk, platform): node_pool for pk, charged in found.items() for platform, node_pool in charged.items()}


def _charged_by_pool(pools: list[Pool]) -> dict[int, dict[str, NodePool]]:
    """Every pool asked for (none left out: a pool without platforms is cached empty) → its platforms' node pools."""
    found: dict[int, dict[str, NodePool]] = {pool.pk: {} for pool in pools}
    if not pools:
        return found
    by_pk = {pool.pk: pool for pool in pools}
    by_id: dict[int, NodePool] = {}  # every node pool of the pools' backends: the candidates and the winners
    named: dict[tuple[int, str, str], NodePool] = {}
    defaults: dict[int, NodePool] = {}
    for node_pool in NodePool.objects.filter(backend_id__in={pool.backend_id for pool in pools}).order_by("name"):
        by_id[node_pool.pk] = node_pool
        if node_pool.selector_kind == SelectorKind.DEFAULT:
            defaults[node_pool.backend_id] = node_pool
        elif node_pool.selector_kind == SelectorKind.PLATFORM:
            named.setdefault((node_pool.backend_id, node_pool.pool_name, node_pool.platform_name), node_pool)
    most: dict[tuple[int, str], tuple[int, str, int]] = {}  # (pool, platform) → (-nodes, name, node pool id)
    held = (
        NodeMembership.objects.filter(pool__in=pools, node__node_pool_member__isnull=False)
        .values("pool_id", "platform__name", "node__node_pool_member__node_pool_id")
        .annotate(nodes=Count("node_id", distinct=True))
    )
    for row in held:
        node_pool = by_id.get(row["node__node_pool_member__node_pool_id"])
        if node_pool is None:  # a node pool of another backend: not one these pools' workflows can be charged to
            continue
        key, rank = (row["pool_id"], row["platform__name"]), (-row["nodes"], node_pool.name, node_pool.pk)
        if key not in most or rank < most[key]:
            most[key] = rank
    for pool_id, platform in Platform.objects.filter(pool__in=pools).values_list("pool_id", "name"):
        pool = by_pk[pool_id]
        node_pool = named.get((pool.backend_id, pool.name, platform))
        if node_pool is None and (pool_id, platform) in most:
            node_pool = by_id[most[(pool_id, platform)][2]]
        if node_pool is None:
            node_pool = defaults.get(pool.backend_id)
        if node_pool is not None:
            found[pool_id][platform] = node_pool
    return found
