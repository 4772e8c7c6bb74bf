"""Writing the usage record as pods start and end (docs/usage.md, "The record").

A task attempt opens when its pod's container starts (the task's RUNNING event, at the cluster's start time)
and closes once, at the first event that ends it (EXITED, RESCHEDULED, PREEMPTED, SPOT_INTERRUPTION,
CANCELLED, STOPPED, a timeout or a lost pod), at that event's time. One row per (task, attempt): an event seen
twice, a retry or a reschedule never counts a second time; an attempt that exited before the portal saw it run
opens and closes at once with the times the cluster reported. `repair_open` closes what a missed event left
open (the rollup job calls it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Case, CharField, DateTimeField, Value, When
from django.utils import timezone

from clusters.machinepools import spec
from clusters.models import Node
from usage.models import CapacityType, Outcome, TaskAttempt, WorkflowRecord
from usage.services import prices

START = "RUNNING"
# Events that say nothing about whether an attempt runs: they neither open nor close one.
NEUTRAL = frozenset({"SUBMITTED", "CREATED", "SCHEDULED", "UNSCHEDULABLE", "WAITING", "RESERVED", "ADMITTED"})
ENDS = {
    "PREEMPTED": Outcome.PREEMPTED,
    "SPOT_INTERRUPTION": Outcome.SPOT_INTERRUPTION,
    "CANCELLED": Outcome.CANCELLED,
    "STOPPED": Outcome.CANCELLED,  # stopped by the portal when its group's lead finished
}  # EXITED: completed or failed as the task ended; any other event (RESCHEDULED, timeouts, BACKEND_ERROR…): failed
CLOSE_BATCH = 500  # attempts closed per UPDATE (its CASE grows with each)
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
SPOT_LABELS = spec.SPOT_LABELS


def on_events(events: Iterable[tuple[int, str, datetime]]) -> None:
    """Open and close attempts for task events just recorded (in the caller's transaction)."""
    starts, ends = set(), {}
    for task_pk, kind, at in events:
        if kind == START:
            starts.add(task_pk)
        elif kind not in NEUTRAL and task_pk not in ends:
            ends[task_pk] = (kind, at)
    if starts:
        open_attempts(starts)
    if ends:
        close_attempts(ends)


def open_attempts(task_pks: Iterable[int]) -> int:
    """Insert the running attempt of each task that has started (idempotent per task and attempt)."""
    return _insert(_attempts(_started_tasks(task_pks)))


def _started_tasks(task_pks: Iterable[int]) -> list:
    from workflows.models import Task

    return list(
        Task.objects.filter(pk__in=list(task_pks), started_at__isnull=False).select_related(
            "workflow__project__department", "workflow__pool__backend"
        )
    )


def close_attempts(ends: dict[int, tuple[str, datetime]]) -> int:
    """Close each task's open attempt with the outcome its event says, at its time; an attempt that ended before
    the portal saw it run (EXITED straight away) is opened and closed at once."""
    from workflows.models import Task, TaskStatus

    now = timezone.now()
    open_rows = {row.task_pk: row for row in TaskAttempt.objects.filter(task_pk__in=list(ends), ended_at__isnull=True)}
    missing = [pk for pk in ends if pk not in open_rows]
    if missing:  # ended without a RUNNING event: the cluster's start time is on the task, if it ran at all
        rows = _attempts(_started_tasks(missing))
        _insert(rows)
        open_rows.update(
            (row.task_pk, row)
            for row in TaskAttempt.objects.filter(task_pk__in=[r.task_pk for r in rows], ended_at__isnull=True)
        )
    statuses = dict(Task.objects.filter(pk__in=list(open_rows)).values_list("pk", "status"))
    closing = []
    for task_pk, row in open_rows.items():
        kind, at = ends[task_pk]
        if kind == "EXITED":
            outcome = Outcome.COMPLETED if statuses.get(task_pk) == TaskStatus.COMPLETED else Outcome.FAILED
        else:
            outcome = ENDS.get(kind, Outcome.FAILED)
        closing.append((row, outcome, at or now))
    return _close(closing)


def _close(closing: list[tuple[TaskAttempt, str, datetime]]) -> int:
    """Close each open attempt with its outcome at its time (never before it started): one UPDATE per
    CLOSE_BATCH attempts, each row's values chosen by CASE on its id; one already closed stays as it was."""
    closed = 0
    for index in range(0, len(closing), CLOSE_BATCH):
        batch = closing[index : index + CLOSE_BATCH]
        ends = [When(pk=row.pk, then=Value(max(_seconds(at), row.started_at))) for row, _, at in batch]
        outcomes = [When(pk=row.pk, then=Value(outcome)) for row, outcome, _ in batch]
        rows = TaskAttempt.objects.filter(pk__in=[row.pk for row, _, _ in batch], ended_at__isnull=True)
        ended = Case(*ends, output_field=DateTimeField())
        outcome = Case(*outcomes, output_field=CharField())
        closed += rows.update(ended_at=ended, outcome=outcome)
    return closed


def repair_open(now: datetime | None = None) -> int:
    """Close attempts whose task has moved on without an event this record heard (a later attempt, the task
    finished, or its workflow deleted): at the task's end if it has one, else now, as failed. Three queries (the
    last one UPDATE for all of them, per CLOSE_BATCH)."""
    from workflows.models import FINISHED_TASK, Task

    now = now or timezone.now()
    open_rows = list(TaskAttempt.objects.filter(ended_at__isnull=True).only("pk", "task_pk", "attempt", "started_at"))
    tasks = {
        row["pk"]: row
        for row in Task.objects.filter(pk__in=[r.task_pk for r in open_rows]).values(
            "pk", "retry_id", "status", "finished_at"
        )
    }
    stale = []
    for row in open_rows:
        task = tasks.get(row.task_pk)
        if task is None:
            stale.append((row, Outcome.FAILED, now))
        elif task["retry_id"] != row.attempt or task["status"] in FINISHED_TASK:
            stale.append((row, Outcome.FAILED, task["finished_at"] or now))
    return _close(stale)


def _insert(rows: list[TaskAttempt]) -> int:
    if not rows:
        return 0
    have = set(TaskAttempt.objects.filter(task_pk__in=[r.task_pk for r in rows]).values_list("task_pk", "attempt"))
    new = [row for row in rows if (row.task_pk, row.attempt) not in have]
    TaskAttempt.objects.bulk_create(new, ignore_conflicts=True)
    return len(new)


def _attempts(tasks: list) -> list[TaskAttempt]:
    """The attempts' rows, reading their nodes, price overrides and the catalog once for all of them."""
    from clusters.machinepools.instance_types import catalog

    if not tasks:
        return []
    shapes = catalog()
    by_backend: dict[int, set[str]] = {}
    for task in tasks:
        by_backend.setdefault(task.workflow.pool.backend_id, set()).add(task.node)
    nodes, overrides = {}, {}
    for backend_id, names in by_backend.items():
        overrides[backend_id] = prices.backend_overrides(backend_id)
        for node in Node.objects.filter(backend_id=backend_id, name__in=[n for n in names if n]):
            nodes[backend_id, node.name] = node
    return [_attempt(task, nodes.get((task.workflow.pool.backend_id, task.node)), overrides, shapes) for task in tasks]


def _attempt(task, node, overrides: dict, shapes: dict) -> TaskAttempt:
    from workflows.parts import workflow_requests

    workflow = task.workflow
    backend = workflow.pool.backend
    project = workflow.project
    asked = workflow_requests([task.pod])  # read as admission reads them
    labels = node.labels if node else {}
    instance_type = next((labels[key] for key in INSTANCE_TYPE_LABELS if labels.get(key)), "")
    spot = any(labels.get(key) == value for key, value in SPOT_LABELS.items())
    if node is None:
        price, share = prices.NodePrice(None, "no price: the node is not in the inventory"), 0
    else:
        price = prices.node_price(backend.pk, instance_type, spot, overrides[backend.pk], shapes)
        share = prices.dominant_share(asked, _allocatable(node))
    return TaskAttempt(
        task_pk=task.pk,
        attempt=task.retry_id,
        workflow_id=workflow.workflow_id,
        task=task.name,
        pod=task.pod_name,
        project=project.name if project else "",
        department=project.department.name if project and project.department_id else "",
        pool=workflow.pool.name,
        platform=task.platform,
        node_pool=task.node_pool,
        backend=backend.name,
        node=task.node,
        instance_type=instance_type,
        capacity_type=CapacityType.SPOT if spot else CapacityType.ON_DEMAND,
        gpu=asked.get("gpu", 0),
        cpu_millis=asked.get("cpu", 0),
        memory_bytes=asked.get("memory", 0),
        started_at=_seconds(task.started_at),
        hourly_cost_micros=prices.hourly_cost_micros(price, share),
        price_source=price.source,
        recorded_at=timezone.now(),
    )


def _allocatable(node) -> dict[str, int]:
    return {"gpu": node.gpu_allocatable, "cpu": node.cpu_allocatable, "memory": node.memory_allocatable}


def _seconds(at: datetime) -> datetime:
    """Whole seconds, as the cluster reports times: sums in whole GPU-seconds add up the same every time."""
    return at.replace(microsecond=0)


def record_workflow(workflow_pk: int) -> bool:
    """The finished workflow's wait and outcome (once; after its finishing transaction committed)."""
    from workflows.models import FINISHED_WORKFLOW, Workflow

    workflow = (
        Workflow.objects.filter(pk=workflow_pk, status__in=list(FINISHED_WORKFLOW))
        .select_related("project__department", "pool__backend")
        .first()
    )
    if workflow is None:
        return False
    running_at = (
        TaskAttempt.objects.filter(workflow_id=workflow.workflow_id)
        .order_by("started_at")
        .values_list("started_at", flat=True)
        .first()
    )
    if running_at is None:  # no attempt recorded (e.g. before the record existed): the tasks' own start
        running_at = (
            workflow.tasks.filter(started_at__isnull=False)
            .order_by("started_at")
            .values_list("started_at", flat=True)
            .first()
        )
    parts = {part.node_pool: part.requests for part in workflow.parts.all()}
    # admitted at submission is stamped a moment before the row's creation time: never before it was submitted
    admitted = workflow.admitted_at or (workflow.created_at if running_at else None)
    if admitted is not None:
        admitted = max(admitted, workflow.created_at)
    project = workflow.project
    _, created = WorkflowRecord.objects.get_or_create(
        workflow_id=workflow.workflow_id,
        defaults={
            "project": project.name if project else "",
            "department": project.department.name if project and project.department_id else "",
            "pool": workflow.pool.name,
            "node_pool": workflow.node_pool,
            "backend": workflow.pool.backend.name,
            "priority": workflow.priority,
            "requests": workflow.requests,
            "parts": parts,
            "submitted_at": workflow.created_at,
            "admitted_at": admitted,
            "running_at": running_at,
            "finished_at": workflow.finished_at,
            "status": workflow.status,
            "preemptible": workflow.preemptible,
            "preemptions": int((workflow.preemption or {}).get("count", 0)),
        },
    )
    return created
