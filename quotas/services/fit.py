"""What a submission can never get, refused before anything is written (docs/admission.md, "Refused at
submission"), through the admission gate's `refuse` (every door: REST, CLI, self-service, OSMO):

* a task that no node of its node pool can hold: no node, real or would-be (an autoscaled machine pool with no
  node yet, at its instance type's shape: pools.services.machine_pool_shapes), offers its GPUs, CPU and memory
  together. A node pool with no node at all refuses nothing (its nodes may be on their way; its queue says so).
  Cordoned and not-Ready nodes count: they may hold the task later. A would-be node counts in the label node
  pool whose label it carries, else in its backend's Default.
* a node pool's part (the workflow's tasks charged there, summed) above the hard limit of its project, or of
  the project's department, in that node pool: it would wait QUEUED as LIMIT forever.

`checker(pool, project, node_pools)` reads what the check needs before the submission's transaction (so the
workflow's name lock is held for writes only): two queries (node shapes, the limits), a third (the backend's
node pools) only when the backend has would-be nodes, whatever the number of tasks; the would-be nodes come
from their per-process cache. The check itself (`Check.refuse`) reads nothing.

Both reads are cached per process, as the quota trees are (access.epoch): the limits while the charging epoch
holds (it moves with every NODE_POOL write, which is where quotas and their limits change, and with projects
and departments created, renamed or deleted; a project moved to another department is another key); the node
shapes while the charging epoch (memberships, nodes gone), the inventory epoch (a node's allocatable, a new
node) and the machine-shape epoch (would-be nodes) hold. On the fleet they were a third of a submission's web
CPU (docs/scale.md). Nothing is cached inside a transaction, and an entry lives at most ACCESS_CACHE_SECONDS.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q

from access import epoch
from pools.services.machine_pool_shapes import SHAPES, would_be_nodes
from quotas.models import RESOURCES, NodePool, NodePoolMember, Quota, SelectorKind
from quotas.units import show
from workflows.admission_gate import TaskAsk
from workflows.errors import WorkflowInvalid

Shape = tuple[int, int, int]  # (gpu devices, cpu millicores, memory bytes), as RESOURCES
MIB = 2**20


@dataclass(frozen=True)
class Check:
    shapes: dict[str, frozenset[Shape]]  # node pool name → the shapes of its nodes (real and would-be)
    limits: tuple[tuple[str, str, int, bool], ...]  # (node pool, resource, limit, the project's own, else its dept's)
    project: str
    department: str

    def refuse(self, asks: list[TaskAsk]) -> None:
        """Raise WorkflowInvalid with every problem found (module docstring); nothing when all can run."""
        problems = self._too_big(asks) + self._over_limit(asks)
        if problems:
            first = problems[0]
            raise WorkflowInvalid(
                f"{len(problems)} problem{'s' if len(problems) > 1 else ''}; first: {first['reason']}",
                field=first["field"],
                value=first["value"],
                problems=problems,
            )

    def _too_big(self, asks: list[TaskAsk]) -> list[dict]:
        problems = []
        for ask in asks:
            offered = self.shapes.get(ask.node_pool)
            wanted = tuple(ask.requests.get(r, 0) for r in RESOURCES)
            if not offered or any(all(w <= o for w, o in zip(wanted, shape, strict=True)) for shape in offered):
                continue
            problems.append(_too_big_problem(ask, wanted, offered))
        return problems

    def _over_limit(self, asks: list[TaskAsk]) -> list[dict]:
        asked: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(RESOURCES, 0))
        for ask in asks:
            for resource in RESOURCES:
                asked[ask.node_pool][resource] += ask.requests.get(resource, 0)
        problems = []
        for node_pool, resource, limit, own in self.limits:
            amount = asked[node_pool][resource] if node_pool in asked else 0
            if amount > limit:
                team = f"project {self.project}" if own else f"department {self.department}"
                tasks = ", ".join(a.task for a in asks if a.node_pool == node_pool)
                reason = (
                    f"node pool {node_pool}: the workflow asks {show(resource, amount)} {resource} (tasks {tasks}); "
                    f"{team}'s hard limit there is {show(resource, limit)}"
                )
                problems.append(
                    {
                        "node_pool": node_pool,
                        "field": f"resources.{resource}",
                        "value": amount,
                        "reason": reason,
                        "resource": resource,
                        "limit": limit,
                    }
                )
        return problems


_LIMITS = epoch.EpochCache(size=4096, epoch=epoch.CHARGING)  # (project, department, node pools) → (limits, dept)
_SHAPES = epoch.EpochCache(size=1024, epoch=(epoch.CHARGING, epoch.INVENTORY, SHAPES))  # (backend, node pools) → shapes


def checker(backend_id: int, project, node_pools: set[str]) -> Check:
    """What the check needs, from this process's caches while the epochs hold (module docstring)."""
    names = frozenset(node_pools)
    limits, department = (), ""
    if project is not None:
        key = (project.pk, project.department_id, names)
        limits, department = _LIMITS.lookup(key, lambda: _limits(project, names))
    name = project.name if project is not None else ""
    shapes = _SHAPES.lookup((backend_id, names), lambda: node_shapes(backend_id, names))
    return Check(shapes, limits, name, department)


def _limits(project, node_pools: frozenset[str]) -> tuple[tuple[tuple[str, str, int, bool], ...], str]:
    """The hard limits of the project and its department in these node pools, and the department's name."""
    limits, department = [], ""
    rows = (
        Quota.objects.filter(node_pool__name__in=node_pools, limit__isnull=False)
        .filter(Q(project_id=project.pk) | Q(department_id=project.department_id))
        .order_by("node_pool__name", "project_id", "resource")
        .values_list("node_pool__name", "resource", "limit", "project_id", "department__name")
    )
    for node_pool, resource, limit, own, department_name in rows:
        limits.append((node_pool, resource, limit, own is not None))
        department = department_name or department
    return tuple(limits), department


def _too_big_problem(ask: TaskAsk, wanted: Shape, offered: set[Shape]) -> dict:
    largest = {r: max(shape[i] for shape in offered) for i, r in enumerate(RESOURCES)}
    over = [r for i, r in enumerate(RESOURCES) if wanted[i] > largest[r]]
    if over:
        resource = over[0]
        asked = ask.requests.get(resource, 0)
        reason = (
            f"task {ask.task} asks {show(resource, asked)} {resource}; the largest node of node pool "
            f"{ask.node_pool} offers {show(resource, largest[resource])}"
        )
    else:
        resource, asked = "gpu", ask.requests.get("gpu", 0)
        together = ", ".join(f"{show(r, ask.requests.get(r, 0))} {r}" for r in RESOURCES)
        reason = f"task {ask.task} asks {together}; no node of node pool {ask.node_pool} offers them together"
    return {
        "task": ask.task,
        "node_pool": ask.node_pool,
        "field": f"resources.{resource}",
        "value": asked,
        "reason": reason,
        "resource": resource,
        "largest": largest[resource],
    }


def node_shapes(backend_id: int, names: set[str]) -> dict[str, frozenset[Shape]]:
    """Node pool name → the distinct shapes of its nodes, real and would-be (module docstring)."""
    shapes: dict[str, set[Shape]] = defaultdict(set)
    rows = (
        NodePoolMember.objects.filter(node_pool__name__in=names)
        .values_list("node_pool__name", "node__gpu_allocatable", "node__cpu_allocatable", "node__memory_allocatable")
        .distinct()
    )
    for name, gpu, cpu, memory in rows:
        shapes[name].add((gpu or 0, cpu or 0, memory or 0))
    candidates = would_be_nodes({backend_id})
    if not candidates:
        return _frozen(shapes)
    pools = list(
        NodePool.objects.filter(backend_id=backend_id)
        .exclude(selector_kind=SelectorKind.PLATFORM)
        .values_list("name", "backend_id", "selector_kind", "label_key", "label_value")
    )
    for node in candidates:
        home = _would_be_home(node, pools)
        if home in names and node.instance is not None:
            instance = node.instance
            shapes[home].add((instance.gpu_count, instance.vcpu * 1000, instance.memory_mib * MIB))
    return _frozen(shapes)


def _frozen(shapes: dict[str, set[Shape]]) -> dict[str, frozenset[Shape]]:
    """A plain mapping of frozen sets: the cached value is shared by every later submission."""
    return {name: frozenset(found) for name, found in shapes.items()}


def _would_be_home(node, pools: list[tuple]) -> str:
    """The node pool a would-be node would join: the label node pool whose label it carries, else the Default."""
    labels = node.spec.node_labels(node.instance)
    mine = [p for p in pools if p[1] == node.backend_id]
    labelled = [p[0] for p in mine if p[2] == SelectorKind.LABEL and labels.get(p[3]) == p[4]]
    if labelled:
        return min(labelled)
    return next((p[0] for p in mine if p[2] == SelectorKind.DEFAULT), "")
