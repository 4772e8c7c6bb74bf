"""The ground rules every lifecycle step follows: which task statuses mean what, the workflow lock, the guarded
UPDATE (`transition`), task events with the cluster's time, and deleting pods after commit (through Celery)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Max, Q
from django.utils import timezone

from workflows import enqueue
from workflows.models import FINISHED_TASK, FINISHED_WORKFLOW, Task, TaskEvent, TaskStatus, Workflow
from workflows.signals import task_events

PENDING, WAITING, RUNNING = TaskStatus.PENDING, TaskStatus.WAITING, TaskStatus.RUNNING
UNFINISHED = (PENDING, WAITING, RUNNING)
ACTIVE = (WAITING, RUNNING)  # a pod exists
FAILURES = frozenset(FINISHED_TASK) - {TaskStatus.COMPLETED, TaskStatus.CANCELLED}
ONE_MICROSECOND = timedelta(microseconds=1)


def record_event(task: Task, kind: str, message: str = "", at=None) -> None:
    """Record what happened to `task`; `at`: when it happened (the cluster's time), else now (the portal's act)."""
    record_events([TaskEvent(task_id=task.pk, kind=kind, message=message[:4000], at=at or timezone.now())])


def record_events(events: list[TaskEvent]) -> None:
    """Record several events at once and announce them (`workflows.signals.task_events`) in this transaction."""
    if not events:
        return
    TaskEvent.objects.bulk_create(events)
    task_events.send(sender=TaskEvent, events=[(event.task_id, event.kind, event.at) for event in events])


def happened(task: Task, cluster_time):
    """When the cluster says something happened to `task`'s pod, true and after every step the portal recorded
    before it. The API's times are whole seconds (and a cluster's clock may lag ours): a pod created, scheduled
    and started in the second its task was submitted and admitted reads as before both. Clamped to the
    submission, such steps used to carry its very microsecond and sort before "Admitted". A time that is not
    after the task's last recorded step stands for a moment later: one microsecond after that step, which is
    still within the second the cluster names whenever the clocks agree, and keeps the steps in the order they
    happened."""
    if cluster_time is None:
        return None
    last = TaskEvent.objects.filter(task_id=task.pk).aggregate(last=Max("at"))["last"] or task.created_at
    if last is None or cluster_time > last:
        return cluster_time
    return last + ONE_MICROSECOND


_TASK_FIELDS = (
    "status",
    "pod_name",
    "pod",
    "retry_id",
    "node",
    "pod_uid",
    "exit_code",
    "interruptions",
    "error",
    "pod_created_at",
    "started_at",
    "finished_at",
)


def lock(task: Task) -> bool:
    """Lock the task's workflow row and re-read the task; False when the workflow (or task) is finished or gone.

    Every write to a workflow's tasks happens in a transaction that first locks the workflow row, always in
    that order (workflow, then tasks), so concurrent writers (watcher, reconciler, Celery workers, cancel)
    neither interleave nor deadlock. Call inside `transaction.atomic()`.
    """
    status = Workflow.objects.select_for_update().filter(pk=task.workflow_id).values_list("status", flat=True).first()
    fresh = Task.objects.filter(pk=task.pk).values(*_TASK_FIELDS).first()
    if status is None or fresh is None:
        return False
    for key, value in fresh.items():
        setattr(task, key, value)
    return status not in FINISHED_WORKFLOW and task.status not in FINISHED_TASK


def transition(task: Task, from_statuses, *conditions: Q, **values) -> bool:
    """UPDATE the task only if it still has its pod name, one of `from_statuses` and `conditions`; mirror on the
    object. Under `lock` this is belt and braces: it also keeps a stale caller from writing twice."""
    updated = Task.objects.filter(
        *conditions, pk=task.pk, pod_name=task.pod_name, status__in=list(from_statuses)
    ).update(**values)
    if updated:
        for key, value in values.items():
            setattr(task, key, value)
    return bool(updated)


def delete_later(backend_id: int, targets: list[tuple[str, str]], why: str) -> None:
    """Delete pods after commit, through Celery (retried while the cluster is unreachable)."""
    if targets:
        enqueue.delete_pods(backend_id, targets, why)


def backend_of(task: Task) -> int:
    workflow = task.workflow  # select_related by every caller that passes a task here
    return workflow.pool.backend_id
