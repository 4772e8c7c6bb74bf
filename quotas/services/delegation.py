"""Delegation to the cluster's own quota scheduler (docs/quota-schedulers.md, "Keeping the cluster in step").

A backend whose `quota_scheduler` is `kai` or `kueue` leaves admission and preemption to that scheduler; the
portal writes its quotas as the scheduler's objects and keeps them in step:

* `tree_for(backend)`: the backend's node pools (label selector, or member node names; capacity) and every
  department → project with their quota rows, as the translation's `clusters.schedulers.QuotaTree`;
* `render(backend)`: the objects to write (KAI `Queue`s; Kueue flavors, Cohorts, ClusterQueues, LocalQueues),
  each checked against the scheduler's published CRD schema; nothing for a `portal` backend;
* `sync_scheduler_objects(backend)`: label the nodes the translation needs labelled, apply every rendered
  object, and delete the portal's objects of this backend (found by their managed labels) no longer
  rendered. Idempotent; a KubeError (cluster down) propagates for the task (quotas.tasks) to retry;
* `schedule_sync(backend_id)`: queue that task once the current transaction commits, once per backend per
  transaction; the hooks (quota writes, node pools, teams, the backend's quota_scheduler, node-pool
  membership) call it. A broker or cluster that is down never fails the write that asked;
* `delegates(node_pool)`: does a scheduler other than the portal admit this node pool's workflows? Admission
  admits at once when it does (the cluster decides).

Node labels: KAI shards by `kai.scheduler/node-pool=<node pool>` on nodes (the Default node pool's nodes
carry none); a Kueue flavor of a platform node pool selects `pool-portal/node-pool=<node pool>`, the label the
portal keeps on every backend's nodes for confinement. Both are patched by quotas.services.node_labels, from
the inventory's node labels (a node already right is not touched).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from clusters.kube import custom_objects
from clusters.kube.connection import KubeClient, connect
from clusters.kube.errors import KubeError
from clusters.models import Backend
from clusters.schedulers import DELEGATING, QuotaTree, kai, kueue, resource_of, validate
from clusters.schedulers import Department as TreeDepartment
from clusters.schedulers import NodePool as TreeNodePool
from clusters.schedulers import Project as TreeProject
from clusters.schedulers import Quota as TreeQuota
from clusters.schedulers.tree import BACKEND_LABEL, MANAGED_BY, MANAGED_BY_LABEL, object_name
from portal.oncommit import once_after_commit
from quotas.models import NodePool, NodePoolMember, Quota, SelectorKind
from quotas.services import node_labels
from quotas.services.capacity import capacities
from teams.models import Department

log = logging.getLogger(__name__)

# (apiVersion, kind) of every object the portal may have written, per scheduler, in the order to apply them
KINDS = {
    "kai": ((kai.API_VERSION, "Queue"),),
    "kueue": (
        (kueue.API_VERSION, "ResourceFlavor"),
        (kueue.API_VERSION, "Cohort"),
        (kueue.API_VERSION, "ClusterQueue"),
        (kueue.API_VERSION, "LocalQueue"),
    ),
}


def _backend(backend: Backend | int) -> Backend:
    return backend if isinstance(backend, Backend) else Backend.objects.get(pk=backend)


def delegates(node_pool: NodePool | str) -> bool:
    """Does KAI or Kueue (not the portal) admit the workflows charged to `node_pool`? One query at most."""
    if isinstance(node_pool, NodePool):
        return Backend.objects.filter(pk=node_pool.backend_id, quota_scheduler__in=DELEGATING).exists()
    return NodePool.objects.filter(name=node_pool, backend__quota_scheduler__in=DELEGATING).exists()


# --- the tree -------------------------------------------------------------------------------------------


def tree_for(backend: Backend | int) -> QuotaTree:
    """The backend's quotas as the translation's input. Departments and projects: all of them (every team has
    a zero quota in every node pool, and may borrow), sorted by name; node pools: the Default first, then by
    name. Five queries whatever the number of node pools, teams and nodes."""
    backend = _backend(backend)
    pools = sorted(NodePool.objects.filter(backend=backend), key=lambda p: (not p.is_default, p.name))
    capacity = capacities(pools)
    names: dict[int, list[str]] = defaultdict(list)
    platform_ids = [p.pk for p in pools if p.selector_kind == SelectorKind.PLATFORM]
    for pool_id, node in (
        NodePoolMember.objects.filter(node_pool_id__in=platform_ids)
        .order_by("node__name")
        .values_list("node_pool_id", "node__name")
    ):
        names[pool_id].append(node)
    pool_name = {p.pk: p.name for p in pools}
    team_quotas: dict[tuple[str, int], dict[str, dict[str, TreeQuota]]] = defaultdict(lambda: defaultdict(dict))
    rows = Quota.objects.filter(node_pool_id__in=list(pool_name)).values_list(
        "node_pool_id", "department_id", "project_id", "resource", "deserved", "limit", "weight", "lend"
    )
    for pool_id, department_id, project_id, resource, deserved, limit, weight, lend in rows:
        key = ("department", department_id) if department_id else ("project", project_id)
        team_quotas[key][pool_name[pool_id]][resource] = TreeQuota(deserved, limit, weight, lend)
    departments = []
    for department in Department.objects.prefetch_related("projects").order_by("name"):
        projects = tuple(
            TreeProject(p.name, _frozen(team_quotas.get(("project", p.pk))), p.priority)
            for p in sorted(department.projects.all(), key=lambda p: p.name)
        )
        departments.append(
            TreeDepartment(department.name, _frozen(team_quotas.get(("department", department.pk))), projects)
        )
    return QuotaTree(
        backend.name,
        backend.namespace,
        tuple(_tree_node_pool(p, capacity[p.pk], names.get(p.pk, [])) for p in pools),
        tuple(departments),
    )


def _frozen(quotas) -> dict:
    return {pool: dict(by_resource) for pool, by_resource in (quotas or {}).items()}


def _tree_node_pool(pool: NodePool, capacity: dict, node_names: list[str]) -> TreeNodePool:
    labels = {pool.label_key: pool.label_value} if pool.selector_kind == SelectorKind.LABEL else {}
    return TreeNodePool(
        pool.name,
        node_labels=labels,
        node_names=tuple(node_names),
        capacity={r: capacity[r] for r in ("gpu", "cpu", "memory")},
        over_quota=pool.over_quota,
        default=pool.is_default,
    )


def render(backend: Backend | int) -> list[dict]:
    """The objects the portal writes for `backend`, validated (SchedulerObjectInvalid otherwise; a name clash
    is a TranslationError); [] when the portal enforces the quotas itself."""
    backend = _backend(backend)
    if backend.quota_scheduler not in DELEGATING:
        return []
    tree = tree_for(backend)
    objects = kai.queues(tree) if backend.quota_scheduler == "kai" else kueue.objects(tree)
    for obj in objects:
        validate(obj)
    return objects


# --- keeping the cluster in step ------------------------------------------------------------------------


@dataclass
class SyncResult:
    backend: str
    scheduler: str
    created: list[str] = field(default_factory=list)  # "Kind name"
    replaced: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    labelled: list[str] = field(default_factory=list)  # node names patched

    def as_dict(self) -> dict:
        return {
            "backend": self.backend,
            "scheduler": self.scheduler,
            "created": self.created,
            "replaced": self.replaced,
            "deleted": self.deleted,
            "labelled": self.labelled,
        }


def managed_selector(backend: Backend) -> str:
    """The label selector of the portal's objects of `backend` (clusters.schedulers.tree.managed_labels)."""
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{BACKEND_LABEL}={object_name(backend.name)}"


def sync_scheduler_objects(
    backend: Backend | int, *, connect_to: Callable[[Backend], KubeClient] = connect
) -> SyncResult:
    """Write what `render` gives to the backend's cluster and delete what the portal wrote before and no longer
    wants (for a `portal` backend: everything it wrote while it delegated). Raises KubeError."""
    backend = _backend(backend)
    wanted = render(backend)
    result = SyncResult(backend.name, backend.quota_scheduler)
    with connect_to(backend) as kube:
        result.labelled = node_labels.patch(kube, backend)  # KAI's shard label, the node-pool label
        for obj in wanted:
            applied = custom_objects.apply(kube, resource_of(obj), obj)
            (result.created if applied.created else result.replaced).append(_said(obj))
        result.deleted = _delete_stale(kube, backend, wanted)
    if result.created or result.deleted or result.labelled:
        log.info(
            "backend %s (%s): %d scheduler object(s) created, %d deleted, %d node(s) labelled",
            backend.name,
            backend.quota_scheduler,
            len(result.created),
            len(result.deleted),
            len(result.labelled),
        )
    return result


def _said(obj: dict) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


def _delete_stale(kube: KubeClient, backend: Backend, wanted: list[dict]) -> list[str]:
    keep = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in wanted}
    deleted = []
    for scheduler, kinds in KINDS.items():
        for api_version, kind in reversed(kinds):  # LocalQueues before their ClusterQueues before flavors
            resource = resource_of({"apiVersion": api_version, "kind": kind})
            try:
                found = custom_objects.list_objects(kube, resource, label_selector=managed_selector(backend))
            except KubeError as error:
                if error.k8s_status == 404 and scheduler != backend.quota_scheduler:
                    break  # that scheduler is not installed: nothing of ours can be there
                raise
            stale = [o for o in found if (kind, o["metadata"].get("namespace"), o["metadata"]["name"]) not in keep]
            stale.sort(key=_is_root)  # KAI queues, Kueue cohorts: children before their parents
            for obj in stale:
                meta = obj["metadata"]
                if custom_objects.delete(kube, resource, meta["name"], meta.get("namespace")):
                    deleted.append(_said({**obj, "kind": kind}))
    return deleted


def _is_root(obj: dict) -> bool:
    spec = obj.get("spec") or {}
    return not (spec.get("parentQueue") or spec.get("parentName"))


# --- scheduling the sync ---------------------------------------------------------------------------------


def _tasks():
    from quotas import tasks  # lazy: loads Celery and the broker client only when something is queued

    return tasks


def delegating_backend_ids() -> list[int]:
    return list(Backend.objects.filter(quota_scheduler__in=DELEGATING).values_list("pk", flat=True))


def schedule_sync(backend_id: int, *, even_if_portal: bool = False) -> bool:
    """Queue `quotas.tasks.sync_scheduler_objects(backend_id)` once the current transaction commits (in-process
    without a broker), unless the backend does not delegate (`even_if_portal`: it just stopped delegating,
    and the objects it had go) or it is queued already in this transaction. Returns whether it queued."""
    if not even_if_portal and not Backend.objects.filter(pk=backend_id, quota_scheduler__in=DELEGATING).exists():
        return False
    return once_after_commit("scheduler_sync_of", backend_id, lambda: _tasks().sync_scheduler_objects.delay(backend_id))


def schedule_all() -> int:
    """`schedule_sync` for every delegating backend (teams changed: every tree has them)."""
    return sum(schedule_sync(pk) for pk in delegating_backend_ids())
