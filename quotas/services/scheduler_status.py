"""What the delegated scheduler says it has allocated, per node pool and project, read from its objects' status.

When KAI or Kueue admits a backend's workloads, the portal's fair-share view and "why queued" read the
scheduler's own figures, written by its controllers into the `status` of the objects the portal applied
(quotas.services.delegation):

* KAI `Queue` (a project's leaf queue in a node pool): `status.allocated`, `allocatedNonPreemptible` and
  `requested` (Kubernetes resource lists: `nvidia.com/gpu`, `cpu`, `memory`), and its conditions;
* Kueue `ClusterQueue` (a project): `status.flavorsUsage` (per flavor = node pool: `total` in use and
  `borrowed` from the cohort), `pendingWorkloads`, `admittedWorkloads`, and its conditions.

Figures come back in the portal's units (gpu devices, cpu millicores, memory bytes). One list call per kind:
the list carries each object's status, so no object is read twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from clusters.kube import custom
from clusters.kube.connection import KubeClient, connect
from clusters.models import Backend
from clusters.schedulers import DELEGATING, kai, kueue, resource_of
from clusters.schedulers.tree import object_name
from pools.engine.placement_fit import to_scheduler_units
from pools.engine.quantity import QuantityError, parse_quantity
from quotas.services.delegation import _backend, managed_selector, tree_for

RESOURCE_OF = {"nvidia.com/gpu": "gpu", "gpu": "gpu", "cpu": "cpu", "memory": "memory"}
K8S_NAME = {"gpu": "nvidia.com/gpu", "cpu": "cpu", "memory": "memory"}


@dataclass(frozen=True)
class QueueUsage:
    """One project's figures in one node pool, as the scheduler reports them (portal units; {} = none)."""

    project: str
    node_pool: str
    queue: str  # the scheduler object they were read from
    allocated: dict[str, int | float] = field(default_factory=dict)
    borrowed: dict[str, int | float] = field(default_factory=dict)  # Kueue: beyond nominal quota
    non_preemptible: dict[str, int | float] = field(default_factory=dict)  # KAI: within deserved quota
    requested: dict[str, int | float] = field(default_factory=dict)  # KAI: allocated + waiting


@dataclass(frozen=True)
class SchedulerStatus:
    backend: str
    scheduler: str  # kai | kueue | portal (nothing to read)
    usage: tuple[QueueUsage, ...] = ()
    pending_workloads: dict[str, int] = field(default_factory=dict)  # Kueue: per project
    admitted_workloads: dict[str, int] = field(default_factory=dict)  # Kueue: per project
    messages: dict[str, str] = field(default_factory=dict)  # queue → its conditions' messages, when any

    def allocated(self, node_pool: str, project: str) -> dict[str, int | float]:
        """What the scheduler has allocated to `project` in `node_pool` ({} when it reported nothing)."""
        return next((u.allocated for u in self.usage if u.node_pool == node_pool and u.project == project), {})


def scheduler_status(
    backend: Backend | int, *, connect_to: Callable[[Backend], KubeClient] = connect
) -> SchedulerStatus:
    """The delegated scheduler's figures for every project of `backend` (raises KubeError when the cluster
    cannot be read). A queue the scheduler has not written a status for yet has empty figures."""
    backend = _backend(backend)
    if backend.quota_scheduler not in DELEGATING:
        return SchedulerStatus(backend.name, backend.quota_scheduler)
    tree = tree_for(backend)
    with connect_to(backend) as kube:
        if backend.quota_scheduler == "kai":
            return _kai(kube, backend, tree)
        return _kueue(kube, backend, tree)


def _listed(kube: KubeClient, backend: Backend, api_version: str, kind: str) -> dict[str, dict]:
    resource = resource_of({"apiVersion": api_version, "kind": kind})
    found = custom.list_objects(kube, resource, label_selector=managed_selector(backend))
    return {obj["metadata"]["name"]: obj for obj in found}


def _kai(kube: KubeClient, backend: Backend, tree) -> SchedulerStatus:
    queues = _listed(kube, backend, kai.API_VERSION, "Queue")
    usage, messages = [], {}
    for pool in tree.node_pools:
        for department in tree.departments:
            for project in department.projects:
                name = kai.queue_name(project.name, pool)
                status = (queues.get(name) or {}).get("status") or {}
                usage.append(
                    QueueUsage(
                        project.name,
                        pool.name,
                        name,
                        allocated=_resources(status.get("allocated")),
                        non_preemptible=_resources(status.get("allocatedNonPreemptible")),
                        requested=_resources(status.get("requested")),
                    )
                )
                _note(messages, name, status)
    return SchedulerStatus(backend.name, "kai", tuple(usage), messages=messages)


def _kueue(kube: KubeClient, backend: Backend, tree) -> SchedulerStatus:
    queues = _listed(kube, backend, kueue.API_VERSION, "ClusterQueue")
    usage, pending, admitted, messages = [], {}, {}, {}
    for department in tree.departments:
        for project in department.projects:
            name = object_name(project.name)
            status = (queues.get(name) or {}).get("status") or {}
            by_flavor = {entry.get("name"): entry.get("resources") or [] for entry in status.get("flavorsUsage") or []}
            for pool in tree.node_pools:
                used = by_flavor.get(object_name(pool.name), [])
                usage.append(
                    QueueUsage(
                        project.name,
                        pool.name,
                        name,
                        allocated=_resources({r.get("name"): r.get("total", 0) for r in used}),
                        borrowed=_resources({r.get("name"): r.get("borrowed", 0) for r in used}),
                    )
                )
            pending[project.name] = int(status.get("pendingWorkloads") or 0)
            admitted[project.name] = int(status.get("admittedWorkloads") or 0)
            _note(messages, name, status)
    return SchedulerStatus(backend.name, "kueue", tuple(usage), pending, admitted, messages)


def _note(messages: dict[str, str], queue: str, status: dict) -> None:
    said = "; ".join(c["message"] for c in status.get("conditions") or [] if c.get("message"))
    if said:
        messages[queue] = said


def _resources(listing) -> dict[str, int | float]:
    """A Kubernetes resource list ({"nvidia.com/gpu": "6", "memory": "64Gi"}) in portal units; resources the
    portal has no quota for are left out, and so is a quantity that does not parse."""
    found: dict[str, int | float] = {}
    for name, value in (listing or {}).items():
        resource = RESOURCE_OF.get(name)
        if resource is None:
            continue
        try:
            quantity = Decimal(parse_quantity(str(value).strip()).value)
        except QuantityError:
            continue
        if resource == "gpu":  # KAI may report GPU fractions
            found[resource] = int(quantity) if quantity == quantity.to_integral_value() else float(quantity)
        else:
            found[resource] = to_scheduler_units(K8S_NAME[resource], quantity)
    return found
