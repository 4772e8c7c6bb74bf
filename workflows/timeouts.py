"""Queue and exec timeouts, enforced by a periodic task (`workflows.tasks.enforce_timeouts`).

* Queue timeout of a QUEUED workflow (waiting for quota admission, docs/admission.md): counted from its
  submission (`created_at`, which a preemption that queues it again leaves as it was) → FAILED_QUEUE_TIMEOUT
  (`workflows.lifecycle.admit_hold_preempt.expire_queued`).
* Queue timeout: a task whose pod was created `queue_timeout_seconds` ago and is still not running
  (WAITING: unschedulable, pulling its image, …) → FAILED_QUEUE_TIMEOUT.
* Exec timeout: a task RUNNING for longer than `exec_timeout_seconds` → FAILED_EXEC_TIMEOUT.

The workflow's timeouts were fixed at submission (the spec's, else the pool's default, capped at the
pool's maximum). The pod is deleted after the status is written (through Celery, retried); the workflow
then fails fast like any other failure (`workflows.lifecycle.settle.settle`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from workflows.lifecycle.admit_hold_preempt import expire_queued
from workflows.lifecycle.settle import fail_task
from workflows.models import Task, TaskStatus
from workflows.spec_fields import format_duration


@dataclass(frozen=True)
class _Limit:
    """One kind of timeout: which tasks it watches, from which moment, and what it does to them."""

    key: str  # the report's count
    status: str  # tasks in this status …
    seconds: str  # … whose workflow has this limit …
    since: str  # … counted from this task field
    failed: str
    kind: str
    message: Callable[[Task, timedelta], str]


def _queue_message(task: Task, limit: timedelta) -> str:
    last = f" (last: {task.error})" if task.error else ""
    return f"queue timeout: not running {format_duration(limit)} after its pod was created{last}"


def _exec_message(task: Task, limit: timedelta) -> str:
    return f"exec timeout: still running after {format_duration(limit)}"


LIMITS = (
    _Limit(
        "queue_timeouts",
        TaskStatus.WAITING,
        "queue_timeout_seconds",
        "pod_created_at",
        TaskStatus.FAILED_QUEUE_TIMEOUT,
        "QUEUE_TIMEOUT",
        _queue_message,
    ),
    _Limit(
        "exec_timeouts",
        TaskStatus.RUNNING,
        "exec_timeout_seconds",
        "started_at",
        TaskStatus.FAILED_EXEC_TIMEOUT,
        "EXEC_TIMEOUT",
        _exec_message,
    ),
)


def enforce(now=None) -> dict:
    now = now or timezone.now()
    report = {}
    for timeout in LIMITS:
        report[timeout.key] = 0
        candidates = (
            Task.objects.select_related("workflow__pool")
            .filter(
                **{
                    "status": timeout.status,
                    f"workflow__{timeout.seconds}__isnull": False,
                    f"{timeout.since}__isnull": False,
                    f"{timeout.since}__lte": now,
                }
            )
            .order_by("id")
        )
        for task in candidates:
            limit = timedelta(seconds=getattr(task.workflow, timeout.seconds))
            if getattr(task, timeout.since) + limit <= now:
                report[timeout.key] += fail_task(
                    task,
                    timeout.failed,
                    timeout.message(task, limit),
                    kind=timeout.kind,
                    from_statuses=(timeout.status,),
                    delete_pod=True,
                )
    report["queue_timeouts"] += expire_queued(now)  # QUEUED (never admitted): counted from submission
    return report
