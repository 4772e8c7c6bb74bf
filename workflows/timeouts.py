"""Queue and exec timeouts, enforced by a periodic task (`workflows.tasks.enforce_timeouts`).

* Queue timeout: a task whose pod was created `queue_timeout_seconds` ago and is still not running
  (WAITING: unschedulable, pulling its image, …) → FAILED_QUEUE_TIMEOUT.
* Exec timeout: a task RUNNING for longer than `exec_timeout_seconds` → FAILED_EXEC_TIMEOUT.

The workflow's timeouts were fixed at submission (the spec's, else the pool's default, capped at the
pool's maximum). The pod is deleted after the status is written (through Celery, retried); the workflow
then fails fast like any other failure (`workflows.lifecycle.settle.settle`).
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from workflows.lifecycle.settle import fail_task
from workflows.models import Task, TaskStatus
from workflows.spec_fields import format_duration


def enforce(now=None) -> dict:
    now = now or timezone.now()
    report = {"queue_timeouts": 0, "exec_timeouts": 0}
    waiting = Task.objects.select_related("workflow__pool").filter(
        status=TaskStatus.WAITING, workflow__queue_timeout_seconds__isnull=False, pod_created_at__isnull=False,
        pod_created_at__lte=now).order_by("id")
    for task in waiting:
        limit = timedelta(seconds=task.workflow.queue_timeout_seconds)
        if task.pod_created_at + limit <= now:
            report["queue_timeouts"] += fail_task(
                task, TaskStatus.FAILED_QUEUE_TIMEOUT,
                f"queue timeout: not running {format_duration(limit)} after its pod was created"
                + (f" (last: {task.error})" if task.error else ""),
                kind="QUEUE_TIMEOUT", from_statuses=(TaskStatus.WAITING,), delete_pod=True)
    running = Task.objects.select_related("workflow__pool").filter(
        status=TaskStatus.RUNNING, workflow__exec_timeout_seconds__isnull=False, started_at__isnull=False,
        started_at__lte=now).order_by("id")
    for task in running:
        limit = timedelta(seconds=task.workflow.exec_timeout_seconds)
        if task.started_at + limit <= now:
            report["exec_timeouts"] += fail_task(
                task, TaskStatus.FAILED_EXEC_TIMEOUT,
                f"exec timeout: still running after {format_duration(limit)}",
                kind="EXEC_TIMEOUT", from_statuses=(TaskStatus.RUNNING,), delete_pod=True)
    return report
