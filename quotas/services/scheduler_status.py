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

from clusters.kube import custom_objects
from clusters.kube.connection import KubeClient, connect
from clusters.models import Backend
from clusters.schedulers import DELEGATING, kai, kueue, resource_of
from clusters.schedulers.tree import object_name
from pools.engine.placement_fit import to_scheduler_units
from pools.engine.quantity import QuantityError, parse_quantity
from portal.errors import PortalError
from quotas.services.delegation import _backend, managed_selector, tree_for
from workflows.models import WorkflowStatus

SCHEDULER_NAMES = {"kai": "KAI-Scheduler", "kueue": "Kueue"}  # as the pages say them
SHORT_NAMES = {"kai": "KAI", "kueue": "Kueue"}  # in "scheduler (KAI): …"
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
        found = self.usage_of(node_pool, project)
        return found.allocated if found else {}

    def usage_of(self, node_pool: str, project: str) -> QueueUsage | None:
        return next((u for u in self.usage if u.node_pool == node_pool and u.project == project), None)


@dataclass(frozen=True)
class StatusRead:
    """The scheduler's status, or why it could not be read (`error`, one line for a page or a command)."""

    status: SchedulerStatus | None
    error: str = ""


def read_status(backend: Backend | int, *, connect_to: Callable[[Backend], KubeClient] = connect) -> StatusRead:
    """`scheduler_status`, with a cluster that cannot be read (down, refusing, not configured) as a line to show
    instead of an exception: the pages that show the scheduler's view must still answer."""
    try:
        return StatusRead(scheduler_status(backend, connect_to=connect_to))
    except PortalError as error:
        return StatusRead(None, f"could not read the scheduler's status: {error}")


def scheduler_says(workflow) -> dict | None:
    """Why a workflow of a delegating backend is not running yet (PENDING or WAITING: the portal admitted it at
    once and KAI or Kueue decides): the scheduler's status message on its project's queue in its node pool, as
    `{"reason": "scheduler (KAI): …", "code", "scheduler", "scheduler_queue"}`. None for any other workflow.
    One list call to the cluster (and the tree's five queries); a cluster that cannot be read is said so."""
    backend = workflow.pool.backend
    if (
        backend.quota_scheduler not in DELEGATING
        or workflow.status not in (WorkflowStatus.PENDING, WorkflowStatus.WAITING)
        or workflow.project is None
        or not workflow.node_pool
    ):
        return None
    prefix = f"scheduler ({SHORT_NAMES[backend.quota_scheduler]})"
    said = {"code": "scheduler", "scheduler": backend.quota_scheduler, "scheduler_queue": ""}
    read = read_status(backend)
    if read.status is None:
        return {**said, "reason": f"{prefix}: {read.error}"}
    usage = read.status.usage_of(workflow.node_pool, workflow.project.name)
    if usage is None:
        return {**said, "reason": f"{prefix}: no queue for project {workflow.project.name} in {workflow.node_pool}"}
    message = read.status.messages.get(usage.queue)
    text = message or f"no status message on queue {usage.queue} yet"
    return {**said, "scheduler_queue": usage.queue, "reason": f"{prefix}: {text}"}


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
    found = custom_objects.list_objects(kube, resource, label_selector=managed_selector(backend))
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
