"""Scale from zero: the node an autoscaled machine pool would add, where it has no node yet.

A machine pool with autoscaling, room to grow (max > 0) and no node in the inventory still serves the
platforms its nodes would belong to: the node rules (`K8_CPU`, `K8_GPU`, `K8_MEMORY`, `K8_STORAGE`) read
its instance type's shape, the preview says "no node now; machine pool ml-training can add a
g4dn.xlarge, 1 × T4; up to 3", and placement shows the would-be node among the real ones, marked.

A would-be node belongs to a platform exactly as a real one would (membership's rules: the platform's
nodeSelector, affinity and tolerations against the labels and taints the machine pool puts on its nodes).
The engine stays pure: it is handed the would-be nodes like any others.

Every submission asks (its node rules read the would-be nodes' shapes), so the answer is cached per process
under the **machine-shape epoch** (`SHAPES`, a row of access.epoch's table, read in the request's one epoch
query). It moves on, in the writing transaction, with everything the answer reads: a machine pool or an
instance type saved or deleted; nodes that change platform (`pools.signals.membership_changed`: a machine
pool's first node joins its platform) or are deleted (`clusters.signals.nodes_deleted`: its last node goes);
new nodes (`clusters.signals.nodes_changed` of a node it had not seen, or of a full sync);
a POOL, POD_TEMPLATE, MACHINE_POOL or BACKEND revision (which platforms a would-be node belongs to). As for
the access caches, nothing is cached inside a transaction and an entry lives at most `ACCESS_CACHE_SECONDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models.fields.json import KT

from access import epoch
from clusters.machinepools.instance_types import catalog
from clusters.machinepools.node_labels import provisioned
from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import MachinePool, Node
from clusters.signals import ALL
from pools.engine import EngineError
from pools.engine.placement import evaluate, place
from pools.services.scale_from_zero_node import WouldBeNode

SHAPES = 3  # the epoch's row id (access.epoch: 1 access, 2 quotas' charging)
# NODE_POOL: a would-be node carries the node-pool label of the node pool that will claim it (node_labels)
CONFIG_TYPES = {"POOL", "POD_TEMPLATE", "MACHINE_POOL", "BACKEND", "NODE_POOL"}
_WOULD_BE = epoch.EpochCache(size=256, epoch=SHAPES)  # frozenset(backend ids) → [WouldBeNode]


def changed(*args, **kwargs) -> None:
    """Something the would-be nodes depend on was written (in the caller's transaction): cached ones are stale."""
    epoch.bump(SHAPES)


def nodes_written(sender, names=None, previous=None, **kwargs) -> None:
    """clusters.signals.nodes_changed: a node may be a machine pool's first (new, or a full sync that cannot
    say which are new); a node that only changed leaves the would-be nodes as they were."""
    if previous is None or names == ALL or any(name not in previous for name in names):
        changed()


def config_written(config_type: str, rows, actor) -> None:
    """configs.revisions listener."""
    if config_type in CONFIG_TYPES:
        changed()


def would_be_nodes(backend_ids: set[int]) -> list[WouldBeNode]:
    """Autoscaled machine pools of these backends with room to grow and no node in the inventory, from this
    process's cache while the machine-shape epoch holds."""
    backends = frozenset(backend_ids)
    return list(_WOULD_BE.lookup(backends, lambda: _would_be_nodes(backends)))  # callers may extend theirs


def _would_be_nodes(backend_ids: frozenset[int]) -> list[WouldBeNode]:
    """The growing machine pools (`_growing`) with no node in the inventory yet. One query when the backends
    have no machine pool; three otherwise."""
    return [up.node for up in _growing(backend_ids) if up.nodes_now == 0]


def would_be_by_platform(platforms) -> dict[int, list[WouldBeNode]]:
    """Per platform id: the would-be nodes that would belong to it (its pod tolerates and selects them)."""
    platforms = list(platforms)
    candidates = would_be_nodes({p.pool.backend_id for p in platforms})
    return _belonging(platforms, candidates, lambda node: node)


def _belonging(platforms, candidates: list, node_of) -> dict[int, list]:
    """Per platform id: the candidates whose node (`node_of(candidate)`, a WouldBeNode) would belong to it, as
    membership decides (the platform's pod tolerates and selects it; resources are not its business)."""
    from pools.services.membership import platform_pod  # the placement engine: loaded only when asked

    found: dict[int, list] = {p.pk: [] for p in platforms}
    if not candidates:
        return found
    for platform in platforms:
        try:
            pod = platform_pod(platform)
        except EngineError:
            continue  # membership reports a platform whose pod cannot be evaluated
        for candidate in candidates:
            node = node_of(candidate)
            on_backend = node.backend_id == platform.pool.backend_id
            if on_backend and evaluate(pod, node.node_info(), check_resources=False).fits:
                found[platform.pk].append(candidate)
    return found


@dataclass(frozen=True)
class ScaleUp:
    """A machine pool that a pod no node takes now waits for: its instance type takes the pod, and it has room to
    add a node (`nodes_now` below its maximum) or a node of its is still starting (`starting`, not ready yet)."""

    node: WouldBeNode  # the machine pool's node, as its instance type and settings make it
    nodes_now: int = 0
    starting: str = ""

    @property
    def machine_pool(self) -> str:
        return self.node.spec.name

    def waits_for(self) -> str:
        """`machine pool gpu-t4-spot to add a node (0 → 1 of max 4)`, or, while a new node starts,
        `machine pool gpu-t4-spot: node gpu-t4-spot-x7 is starting (1 of max 4)`."""
        name, now, most = self.machine_pool, self.nodes_now, self.node.spec.most_nodes
        if self.starting:
            return f"machine pool {name}: node {self.starting} is starting ({now} of max {most})"
        return f"machine pool {name} to add a node ({now} → {now + 1} of max {most})"


def machine_pools_taking(pods: list[tuple[int, str, dict]]) -> list[ScaleUp | None]:
    """For each (pool id, platform name, pod) of a pod no node takes now: the machine pool of its platform that
    would take it (its node belongs to the platform as membership decides, and the pod fits an empty one) and is
    adding a node or can add one; one whose node is already starting first. None when no machine pool could
    help. The same four queries whatever the number of pods."""
    from pools.models import Platform

    if not pods:
        return []
    pool_ids, names = {pool_id for pool_id, _, _ in pods}, {name for _, name, _ in pods}
    platforms = {
        (p.pool_id, p.name): p
        for p in Platform.objects.filter(pool_id__in=pool_ids, name__in=names).select_related("pool")
    }
    growing = _growing(frozenset(p.pool.backend_id for p in platforms.values()))
    serving = _belonging(list(platforms.values()), growing, lambda up: up.node)
    found: list[ScaleUp | None] = []
    for pool_id, name, pod in pods:
        platform = platforms.get((pool_id, name))
        found.append(_first_taking(pod, serving.get(platform.pk, []) if platform else []))
    return found


def _growing(backend_ids: frozenset[int]) -> list[ScaleUp]:
    """The autoscaled machine pools of these backends that are adding a node or can add one, those with a node
    starting first, then by name."""
    pools = list(
        MachinePool.objects.filter(backend_id__in=backend_ids, autoscaling=True, max_replicas__gt=0).order_by("name")
    )
    if not pools:
        return []
    counts: dict[str, int] = {}
    starting: dict[str, str] = {}
    rows = (
        Node.objects.filter(backend_id__in=backend_ids, labels__has_key=MACHINEPOOL_LABEL)
        .order_by("name")
        .values_list(KT(f"labels__{MACHINEPOOL_LABEL}"), "name", "ready")
    )
    for pool_name, node_name, ready in rows:
        counts[pool_name] = counts.get(pool_name, 0) + 1
        if not ready:
            starting.setdefault(pool_name, node_name)
    types = catalog()
    found, labels = [], {}
    for pool in pools:
        spec, now = provisioned(pool.spec(), pool.backend_id, labels), counts.get(pool.name, 0)
        if pool.name in starting or now < spec.most_nodes:
            node = WouldBeNode(spec, types.get(pool.instance_type), pool.backend_id)
            found.append(ScaleUp(node, now, starting.get(pool.name, "")))
    return sorted(found, key=lambda up: not up.starting)  # stable: by name within each kind


def _first_taking(pod: dict, candidates: list[ScaleUp]) -> ScaleUp | None:
    if not candidates:
        return None
    try:
        verdicts = place(pod, [up.node.node_info() for up in candidates])
    except EngineError:
        return None  # a pod the engine cannot read: the scheduler's own reason stands
    return next((up for up, verdict in zip(candidates, verdicts, strict=True) if verdict.fits), None)
