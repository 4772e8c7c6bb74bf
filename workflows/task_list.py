"""Listing tasks across workflows (OSMO's `GET /api/task`, `osmo task list`), with who may see what decided
as for the workflow list (`workflows.queries`): the caller's own tasks by default, others' (`users`,
`all_users`) in the pools where `access.policy` grants `workflow:List`.

Statuses are OSMO's task names or the portal's: PROCESSING is a task without a pod (the portal's PENDING),
SCHEDULING a pod not bound to a node and INITIALIZING a bound one (the portal's WAITING), FAILED_CANCELED the
portal's CANCELLED. A task's resources are what its resolved pod requests (`placement_fit.pod_requests`).

Two queries whatever the page size: the principal's roles (memoised per request) and the page.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import F, Q, QuerySet

from access import actions, policy
from pools.engine.placement_fit import pod_requests
from portal.numbers import MAX_PAGE
from workflows.models import Task, TaskStatus, Workflow

GIB = 2**30
# OSMO's task statuses (src/utils/job/task.py TaskGroupStatus) with their stored meaning; any other OSMO
# status (FAILED_IMAGE_PULL, …) is one the portal never gives, and matches nothing.
OSMO_TASK_STATUSES = (
    "WAITING",
    "PROCESSING",
    "SCHEDULING",
    "INITIALIZING",
    "RUNNING",
    "FAILED",
    "COMPLETED",
    "FAILED_EXEC_TIMEOUT",
    "FAILED_START_ERROR",
    "FAILED_START_TIMEOUT",
    "FAILED_SERVER_ERROR",
    "FAILED_BACKEND_ERROR",
    "FAILED_QUEUE_TIMEOUT",
    "FAILED_IMAGE_PULL",
    "FAILED_UPSTREAM",
    "FAILED_EVICTED",
    "FAILED_PREEMPTED",
    "FAILED_CANCELED",
)
KNOWN_STATUSES = frozenset(OSMO_TASK_STATUSES) | frozenset(TaskStatus.values)
_STATUS_FILTERS = {
    "PROCESSING": Q(status=TaskStatus.PENDING),
    "SCHEDULING": Q(status=TaskStatus.WAITING, node=""),
    "INITIALIZING": Q(status=TaskStatus.WAITING) & ~Q(node=""),
    "FAILED_CANCELED": Q(status=TaskStatus.CANCELLED),
}


@dataclass
class TaskQuery:
    workflow_id: str = ""
    statuses: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    all_users: bool = False
    pools: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    priority: list[str] = field(default_factory=list)
    started_after: datetime | None = None
    started_before: datetime | None = None
    offset: int = 0
    limit: int = 20
    order: str = "asc"


@dataclass
class Resources:
    """A task's requests in OSMO's units: cores, GiB and GPUs (OSMO's `cpu`, `memory`, `storage`, `gpu`)."""

    storage: float = 0
    cpu: float = 0
    memory: float = 0
    gpu: float = 0

    @classmethod
    def of(cls, pod: dict) -> Resources:
        requests = pod_requests(pod) if pod else {}
        return cls(
            storage=_number(requests.get("ephemeral-storage", 0) / GIB),
            cpu=_number(requests.get("cpu", 0) / 1000),
            memory=_number(requests.get("memory", 0) / GIB),
            gpu=requests.get("nvidia.com/gpu", 0),
        )

    def add(self, other: Resources) -> None:
        for name in ("storage", "cpu", "memory", "gpu"):
            setattr(self, name, _number(getattr(self, name) + getattr(other, name)))

    def as_dict(self) -> dict[str, float]:
        return {"storage": self.storage, "cpu": self.cpu, "memory": self.memory, "gpu": self.gpu}


def _number(value: float) -> float:
    """A whole number as an int (`8`, not `8.0`), else three decimals."""
    return int(value) if float(value).is_integer() else round(value, 3)


def status_filter(names: list[str]) -> Q:
    """The stored tasks the statuses name (OSMO's or the portal's, any case; checked by the caller)."""
    condition = Q(pk__in=[])
    for name in names:
        upper = name.upper()
        if upper in _STATUS_FILTERS:
            condition |= _STATUS_FILTERS[upper]
        elif upper in TaskStatus.values:
            condition |= Q(status=upper)
    return condition


def matching_tasks(who, query: TaskQuery) -> QuerySet[Task]:
    rows = Task.objects.all()
    if who is not None:
        principal = policy.principal(who)
        visible = policy.restrict(Workflow.objects.all(), principal, actions.WORKFLOW_LIST)
        rows = rows.filter(workflow__in=visible.values("pk"))
        if not query.users and not query.all_users:
            me = principal.user
            rows = rows.filter(workflow__submitted_by_id=me.pk) if me.is_authenticated else rows.none()
    if query.users:
        rows = rows.filter(workflow__submitted_by__username__in=query.users)
    if query.workflow_id:
        rows = rows.filter(workflow__workflow_id__icontains=query.workflow_id)
    if query.statuses:
        rows = rows.filter(status_filter(query.statuses))
    if query.pools:
        rows = rows.filter(workflow__pool__name__in=query.pools)
    if query.nodes:
        rows = rows.filter(node__in=query.nodes)
    if query.priority:
        rows = rows.filter(workflow__priority__in=query.priority)
    if query.started_after:
        rows = rows.filter(started_at__gte=query.started_after)
    if query.started_before:
        rows = rows.filter(started_at__lt=query.started_before)
    return rows


def list_tasks(who, query: TaskQuery) -> list[Task]:
    """One page of tasks in the order they started (`asc`: latest last, those not started yet after them;
    `desc` the reverse)."""
    rows = matching_tasks(who, query).select_related("workflow__pool", "workflow__submitted_by")
    started = F("started_at").asc(nulls_last=True) if query.order == "asc" else F("started_at").desc(nulls_first=True)
    rows = rows.order_by(started, "id" if query.order == "asc" else "-id")
    limit = max(1, min(query.limit, MAX_PAGE))
    return list(rows[query.offset : query.offset + limit])


def summaries(who, query: TaskQuery, by_workflow: bool = False) -> list[dict]:
    """OSMO's `summary` (resources summed per user, pool and priority) or `aggregate_by_workflow` (per
    workflow too) of the matching tasks, in that order; `offset`/`limit` page the summaries."""
    keys = ["workflow__submitted_by__username", "workflow__pool__name", "workflow__priority"]
    if by_workflow:
        keys.append("workflow__workflow_id")
    totals: dict[tuple, Resources] = defaultdict(Resources)
    for *key, pod in matching_tasks(who, query).values_list(*keys, "pod").order_by(*keys):
        totals[tuple(key)].add(Resources.of(pod))
    entries = []
    for key, resources in totals.items():
        entry = {"user": key[0], "pool": key[1], "priority": key[2], **resources.as_dict()}
        if by_workflow:
            entry["workflow_id"] = key[3]
        entries.append(entry)
    limit = max(1, min(query.limit, MAX_PAGE))
    return entries[query.offset : query.offset + limit]
