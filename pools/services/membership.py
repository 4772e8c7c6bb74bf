"""Which nodes belong to which (pool, platform), decided by the placement engine and cached in a table.

A node belongs to a platform when the platform's pod could be placed on it, resources aside: the
engine's `evaluate(..., check_resources=False)` over nodeSelector, required node affinity (unlike
OSMO, which ignores affinity), taints/tolerations and cordon. The platform's pod is the sample pod the
engine resolves from `Platform.compiled` (defaults applied, so `{{VARIABLES}}` are substituted),
reduced to the fields that decide placement; it is parsed once per compiled fingerprint.

Recomputed for the nodes that changed (sync, watch events: `clusters.signals.nodes_changed`) and for the
platforms whose configuration changed (`pools.services.config_handlers`, after `compilation.recompile_pools`).
Writes are diffs: unchanged memberships cost nothing; a change is announced to the apps above
(`pools.signals.membership_changed`: the quotas app's node pools follow platforms).
Classification (OSMO §6.2): SHARED = several pools, RESERVED = one pool, UNUSED = none.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.db.models import QuerySet
from django.db.models.fields.json import KT

from clusters.models import Node
from clusters.signals import ALL
from pools.engine import EngineError, TaskInput, resolve
from pools.engine.placement import NOT_EVALUATED, NodeInfo, PreparedPod, evaluate, fits, place, prepare_pod
from pools.models import NodeMembership, Platform
from pools.services import capacity_summary
from pools.services.compilation import compiled_platform
from pools.signals import membership_changed
from portal.generation import GenerationCache

log = logging.getLogger(__name__)

PLACEMENT_FIELDS = ("nodeSelector", "affinity", "tolerations")
FULL_RECOMPUTE_ABOVE = 1000  # node names: beyond this, recompute the whole backend (cheaper than a big IN)
_POD_CACHE: OrderedDict[str, PreparedPod | EngineError] = OrderedDict()
_POD_CACHE_SIZE = 1024
_ABSENT = object()
_TARGETS = GenerationCache()  # backend id -> its targets, under the config generation they were read at


@dataclass
class Target:
    """One platform as membership sees it: its pool, backend and parsed pod (or why it has none)."""

    platform_id: int
    pool_id: int
    backend_id: int
    label: str  # pool/platform
    pod: PreparedPod | None
    error: str = ""


def platform_pod(platform: Platform) -> PreparedPod:
    """The platform's pod reduced to nodeSelector, affinity and tolerations. Raises EngineError."""
    key = (platform.compiled or {}).get("fingerprint")
    cached = _POD_CACHE.get(key) if key else None
    if cached is None:
        try:
            cached = membership_pod(compiled_platform(platform))
        except EngineError as error:
            cached = error
        if key:
            _POD_CACHE[key] = cached
            if len(_POD_CACHE) > _POD_CACHE_SIZE:
                _POD_CACHE.popitem(last=False)
    if isinstance(cached, EngineError):
        raise cached
    return cached


def membership_pod(compiled) -> PreparedPod:
    """A compiled platform's sample pod, reduced to what decides membership. Raises EngineError."""
    try:
        pod = resolve(compiled, TaskInput(name="membership-check", command=["true"])).pod
    except EngineError:  # e.g. a required variable without default: fall back to the merged template
        pod = compiled.merged.body
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    return prepare_pod({"spec": {key: spec[key] for key in PLACEMENT_FIELDS if key in spec}})


def targets(*, backend_ids: Iterable[int] | None = None, platform_ids: Iterable[int] | None = None) -> list[Target]:
    """Platforms in scope with their parsed pods. Reads only each compiled config's fingerprint; the
    (large) compiled JSON is loaded only for a fingerprint not parsed before."""
    query = Platform.objects.all()
    if backend_ids is not None:
        query = query.filter(pool__backend_id__in=list(backend_ids))
    if platform_ids is not None:
        query = query.filter(pk__in=list(platform_ids))
    found = []
    for pk, pool_id, backend_id, pool_name, name, fingerprint in query.values_list(
        "pk", "pool_id", "pool__backend_id", "pool__name", "name", KT("compiled__fingerprint")
    ):
        label = f"{pool_name}/{name}"
        try:
            cached = _POD_CACHE.get(fingerprint) if fingerprint else None
            if cached is None:
                cached = platform_pod(Platform.objects.select_related("pool").get(pk=pk))
            elif isinstance(cached, EngineError):
                raise cached
            found.append(Target(pk, pool_id, backend_id, label, cached))
        except EngineError as error:
            log.warning("platform %s: no membership, its pod cannot be evaluated: %s", label, error)
            found.append(Target(pk, pool_id, backend_id, label, None, str(error)))
    return found


def node_infos(nodes: QuerySet[Node]) -> list[tuple[int, int, NodeInfo | None]]:
    """(node id, backend id, NodeInfo or None when the stored node is malformed)."""
    return [
        (pk, backend_id, node_info(name, labels, taints, unschedulable))
        for pk, backend_id, name, labels, taints, unschedulable in nodes.values_list(
            "pk", "backend_id", "name", "labels", "taints", "unschedulable"
        )
    ]


def node_info(name: str, labels: dict, taints: list, unschedulable: bool) -> NodeInfo | None:
    """What membership looks at (resources aside); None for a node the engine cannot read."""
    try:
        return NodeInfo(name=name, labels=labels or {}, taints=taints or [], unschedulable=unschedulable)
    except EngineError as error:
        log.warning("node %s: skipped for membership: %s", name, error.reason)
        return None


def _wanted(infos, found: list[Target]) -> dict[tuple[int, int], int]:
    """(node id, platform id) -> pool id for every member, node by node; the engine groups nodes into classes."""
    by_backend: dict[int, list[NodeInfo]] = {}
    for _, backend_id, info in infos:
        if info is not None:  # a malformed node belongs to no platform
            by_backend.setdefault(backend_id, []).append(info)
    members: dict[int, list[tuple[Target, Iterator[bool]]]] = {}
    for target in found:
        if target.pod is not None and target.backend_id in by_backend:
            mask = fits(target.pod, by_backend[target.backend_id], check_resources=False)
            members.setdefault(target.backend_id, []).append((target, iter(mask)))
    wanted = {}
    for node_id, backend_id, info in infos:
        if info is None:
            continue
        for target, mask in members.get(backend_id, ()):
            if next(mask):
                wanted[node_id, target.platform_id] = target.pool_id
    return wanted


def _write(
    existing: QuerySet[NodeMembership], wanted: dict[tuple[int, int], int], backend_ids: Iterable[int]
) -> tuple[int, int]:
    """Make `existing` (the rows in scope) equal `wanted`; returns (added, removed). Announces the nodes whose
    platforms changed (`pools.signals.membership_changed`), in this transaction."""
    current = {
        (node_id, platform_id): pk for pk, node_id, platform_id in existing.values_list("pk", "node_id", "platform_id")
    }
    stale = {key: pk for key, pk in current.items() if key not in wanted}
    fresh = [
        NodeMembership(node_id=node_id, platform_id=platform_id, pool_id=pool_id)
        for (node_id, platform_id), pool_id in wanted.items()
        if (node_id, platform_id) not in current
    ]
    stale_pks = list(stale.values())
    for start in range(0, len(stale_pks), 1000):
        NodeMembership.objects.filter(pk__in=stale_pks[start : start + 1000]).delete()
    NodeMembership.objects.bulk_create(fresh, batch_size=1000)
    if stale or fresh:
        capacity_summary.forget(backend_ids)  # the summed capacity of these nodes' pools no longer holds
        moved = {node_id for node_id, _ in stale} | {row.node_id for row in fresh}
        membership_changed.send(sender=NodeMembership, backend_ids=sorted(set(backend_ids)), node_ids=moved)
    return len(fresh), len(stale)


def recompute_nodes(
    backend_id: int,
    names: list[str] | None = None,
    *,
    infos: list[tuple[int, int, NodeInfo | None]] | None = None,
    found: list[Target] | None = None,
) -> tuple[int, int]:
    """Membership of the backend's nodes called `names` (all when None) in every platform of the backend.

    `infos` (node id, backend id, NodeInfo) saves reading back nodes the caller has just written; `found`,
    the backend's targets when the caller has read them.
    """
    scope = NodeMembership.objects.filter(node__backend_id=backend_id)
    if infos is not None:
        scope = scope.filter(node_id__in=[pk for pk, _, _ in infos])
    else:
        nodes = Node.objects.filter(backend_id=backend_id)
        if names is not None and len(names) <= FULL_RECOMPUTE_ABOVE:
            nodes = nodes.filter(name__in=names)
            scope = scope.filter(node__name__in=names)
        infos = node_infos(nodes)
    if found is None:
        found = targets(backend_ids=[backend_id])
    return _write(scope, _wanted(infos, found), [backend_id])


def backend_targets(backend_id: int, generation: str | None = None) -> list[Target]:
    """`targets` of one backend; with the config generation read before (portal.generation), from the
    cache when nothing they are read from was written since. Callers only read the targets."""
    found = _TARGETS.get(backend_id, generation)
    if found is None:
        found = targets(backend_ids=[backend_id])
        _TARGETS.put(backend_id, generation, found)
    return found


def nodes_changed(
    *,
    backend_id: int,
    names: list[str] | str,
    nodes: list[Node] | None = None,
    previous: dict[str, dict] | None = None,
    generation: str | None = None,
    **_,
) -> tuple[int, int]:
    """`clusters.signals.nodes_changed`: membership of those nodes; `nodes`, just written, are not read back.

    With `previous` (their former labels, taints and cordon), a node whose taints and cordon are the same and
    whose changed labels are none that a platform's pod reads keeps its memberships: it is not recomputed.
    With `generation`, the backend's platforms come from the cache while it holds (backend_targets)."""
    if names == ALL:
        return recompute_nodes(backend_id)
    if nodes is None or len(names) > FULL_RECOMPUTE_ABOVE:
        return recompute_nodes(backend_id, names=names)
    found = None
    if previous is not None:
        found = backend_targets(backend_id, generation)
        read = {key for target in found if target.pod is not None for key in target.pod.label_keys}
        nodes = [node for node in nodes if may_move(node, previous.get(node.name), read)]
        if not nodes:
            return (0, 0)
    infos = [(n.pk, backend_id, node_info(n.name, n.labels, n.taints, n.unschedulable)) for n in nodes]
    return recompute_nodes(backend_id, names=names, infos=infos, found=found)


def may_move(node: Node, before: dict | None, label_keys: set[str]) -> bool:
    """Whether a node's change can change its memberships: new, other taints or cordon, or a label in `label_keys`
    (the labels the platforms' pods read) added, removed or changed."""
    if before is None or before["taints"] != node.taints or bool(before["unschedulable"]) != bool(node.unschedulable):
        return True
    old, new = before["labels"] or {}, node.labels or {}
    return any(old.get(key, _ABSENT) != new.get(key, _ABSENT) for key in label_keys)


def recompute_platforms(platform_ids: Iterable[int]) -> tuple[int, int]:
    """Membership of every node of their backends in these platforms (after a config change)."""
    platform_ids = list(platform_ids)
    found = targets(platform_ids=platform_ids)
    backend_ids = {target.backend_id for target in found}
    infos = node_infos(Node.objects.filter(backend_id__in=backend_ids)) if backend_ids else []
    return _write(NodeMembership.objects.filter(platform_id__in=platform_ids), _wanted(infos, found), backend_ids)


def recompute_for_pools(pools: QuerySet) -> tuple[int, int]:
    """Config changed for `pools`: recompute their platforms (a no-op when their backends have no nodes)."""
    platform_ids = list(Platform.objects.filter(pool__in=pools).values_list("pk", flat=True))
    if not platform_ids:
        return (0, 0)
    if (
        not Node.objects.filter(backend__pools__in=pools).exists()
        and not NodeMembership.objects.filter(platform_id__in=platform_ids).exists()
    ):
        return (0, 0)
    return recompute_platforms(platform_ids)


# ------------------------------------------------------- explaining (the stored rows are read in membership_reads)


def explain_platform(platform: Platform) -> dict:
    """Which nodes of the platform's backend belong to it, and for the others, why not.

    `{"members": [names], "others": [{"node", "reasons"}], "would_be": [{"node", "fits", "reasons"}],
    "error": str, "not_evaluated": [...]}`; `would_be`: the node each scale-from-zero machine pool of the
    backend would add (`pools.services.machine_pool_shapes`), member or not.
    """
    result = {"members": [], "others": [], "would_be": [], "error": "", "not_evaluated": list(NOT_EVALUATED)}
    try:
        pod = platform_pod(platform)
    except EngineError as error:
        result["error"] = f"the platform's pod cannot be evaluated: {error}"
        return result
    nodes = Node.objects.filter(backend_id=platform.pool.backend_id).order_by("name")
    infos = [info for _, _, info in node_infos(nodes) if info is not None]
    for info, verdict in zip(infos, place(pod, infos, check_resources=False), strict=True):
        if verdict.fits:
            result["members"].append(info.name)
        else:
            result["others"].append({"node": info.name, "reasons": list(verdict.reasons)})
    from pools.services.machine_pool_shapes import would_be_nodes  # (it imports this module lazily too)

    for node in would_be_nodes({platform.pool.backend_id}):
        verdict = evaluate(pod, node.node_info(), check_resources=False)
        result["would_be"].append({"node": node.name, "fits": verdict.fits, "reasons": list(verdict.reasons)})
    return result


def explain_node(node: Node) -> list[dict]:
    """Every platform of the node's backend: member or not, and why not (`{"platform", "fits", "reasons"}`)."""
    infos = node_infos(Node.objects.filter(pk=node.pk))
    info = infos[0][2] if infos else None
    rows = []
    for target in sorted(targets(backend_ids=[node.backend_id]), key=lambda t: t.label):
        if target.pod is None:
            rows.append({"platform": target.label, "fits": False, "reasons": [target.error]})
        elif info is None:
            rows.append({"platform": target.label, "fits": False, "reasons": ["the stored node is malformed"]})
        else:
            verdict = evaluate(target.pod, info, check_resources=False)
            rows.append({"platform": target.label, "fits": verdict.fits, "reasons": list(verdict.reasons)})
    return rows
