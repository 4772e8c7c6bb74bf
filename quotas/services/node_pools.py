"""Node pools as the rest of the portal asks about them: a backend's Default, which node pool a workflow is
charged to, the nodeSelector that lands pods in a node pool, and whether a node pool is managed.

Charging (docs/quotas.md): a workflow is charged to the node pool of its lead task's (pool, platform): the
platform node pool naming that platform if any (ties by name), else the node pool holding most of that
platform's member nodes (ties by name), else the backend's Default.

Managed: a node pool where some quota row guarantees something (deserved > 0) or caps something (a limit).
An unmanaged node pool admits its workflows at once, as the portal did before quotas.
"""

from __future__ import annotations

from django.db.models import Count, Q

from access.services.audit import SYSTEM
from clusters.models import Backend
from clusters.schedulers.kueue import NODE_POOL_LABEL  # one key for Kueue's flavors and the portal's confinement
from clusters.schedulers.tree import object_name
from configs import store
from configs.models import ConfigType
from configs.revisions import Actor
from pools.models import Pool
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
