"""The hooks admission uses to move a workflow through its node pool's queue (docs/admission.md, "Queued
workflows"): `admit`, `hold`, `preempt`, and the queue timeout of a QUEUED workflow. Workflows decides none of
this: the quotas app (or any registered `workflows.admission_gate`) calls these services with its decisions.

* `admit`: one part of the workflow (its tasks charged to one node pool) admitted: each of its PENDING tasks'
  stored pod gets the node pool's nodeSelector, the label `pool-portal/preemptible: "true"|"false"` and the
  annotation `pool-portal/admission` (why). While another part waits, the admitted one is a reservation (it
  holds its room; nothing is created). With the last part: QUEUED → PENDING (guarded), `admitted_at` now,
  `preemptible` when any part is, `queue_reason` cleared; then pod creation is enqueued.
* `hold`: writes why it waits (`queue_reason`), only when that changed.
* `preempt`: an admitted, unfinished workflow's unfinished tasks end FAILED_PREEMPTED with exit code 3006
  (OSMO's preemption code), their pods are deleted after commit, `preemption` records why and for whom; then
  the tasks' exit action for 3006 decides: all RESCHEDULE (with retries left) → the workflow goes back to
  QUEUED with those tasks PENDING under a new retry pod name (as `exits` reschedules); otherwise the workflow
  ends FAILED_PREEMPTED. `created_at` is never touched: the queue timeout counts from submission. A QUEUED
  workflow whose reservation is taken as a victim has all its reservations released (it keeps waiting); a
  workflow requeued has all its parts waiting again: preempting any part preempts the whole (gang).
* `expire_queued`: a QUEUED workflow whose queue timeout has passed since submission ends FAILED_QUEUE_TIMEOUT.
"""

from __future__ import annotations

import copy
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from pools.confinement import confined
from workflows import enqueue
from workflows.lifecycle.exits import RESCHEDULE, exit_action, next_attempt
from workflows.lifecycle.transitions import (
    PENDING,
    UNFINISHED,
    delete_later,
    record_event,
    record_events,
    transition,
)
from workflows.models import Task, TaskEvent, TaskStatus, Workflow, WorkflowPart, WorkflowStatus
from workflows.signals import announce_finished
from workflows.spec_fields import format_duration

PREEMPTIBLE_LABEL = "pool-portal/preemptible"
ADMISSION_ANNOTATION = "pool-portal/admission"
PREEMPTED_EXIT_CODE = 3006  # OSMO's ExitCode for a preempted task (FAILED_PREEMPTED)
ADMITTED = (WorkflowStatus.PENDING, WorkflowStatus.WAITING, WorkflowStatus.RUNNING)


def _locked_status(workflow_pk: int) -> str | None:
    """Lock the workflow row (the order every lifecycle write follows: workflow, then its tasks)."""
    return Workflow.objects.select_for_update().filter(pk=workflow_pk).values_list("status", flat=True).first()


def admitted_pod(
    pod: dict, *, preemptible: bool, node_selector: dict | None = None, labels=None, annotations=None
) -> dict:
    """The stored pod as admission lets it start: nodeSelector merged (the node pool's keys win), the
    preemptible label and any extra labels and annotations."""
    pod = copy.deepcopy(pod)
    metadata = pod.setdefault("metadata", {})
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        **(labels or {}),
        PREEMPTIBLE_LABEL: "true" if preemptible else "false",
    }
    if annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    return confined(pod, node_selector)


def admit(
    workflow_pk: int,
    *,
    preemptible: bool,
    node_pool: str = "",
    node_selector: dict | None = None,
    labels: dict | None = None,
    annotations: dict | None = None,
) -> bool:
    """Admit the workflow's part in `node_pool` ("": all its parts) with its tasks' pods patched; once no part
    waits, QUEUED → PENDING and pod creation enqueued after commit. False when the workflow is no longer QUEUED
    (cancelled, timed out) or that part is already admitted (by another pass)."""
    now = timezone.now()
    why = (annotations or {}).get(ADMISSION_ANNOTATION) or (
        "admitted over quota (preemptible)" if preemptible else "admitted"
    )
    with transaction.atomic():
        if _locked_status(workflow_pk) != WorkflowStatus.QUEUED:
            return False
        parts = list(WorkflowPart.objects.filter(workflow_id=workflow_pk))
        mine = [p for p in parts if not node_pool or p.node_pool == node_pool]
        if mine and all(p.admitted_at for p in mine):
            return False
        tasks = Task.objects.filter(workflow_id=workflow_pk, status=PENDING)
        tasks = list((tasks.filter(node_pool=node_pool) if node_pool and parts else tasks).order_by("id").only("pod"))
        for task in tasks:
            task.pod = admitted_pod(
                task.pod, preemptible=preemptible, node_selector=node_selector, labels=labels, annotations=annotations
            )
        Task.objects.bulk_update(tasks, ["pod"])
        for part in mine:
            part.admitted_at, part.preemptible = now, preemptible
        WorkflowPart.objects.bulk_update(mine, ["admitted_at", "preemptible"])
        waiting = [p for p in parts if not p.admitted_at]
        kind = "RESERVED" if waiting else "ADMITTED"
        if waiting:
            why += f"; reserved until {_named_parts(waiting)} {'is' if len(waiting) == 1 else 'are'} admitted"
        record_events([TaskEvent(task_id=t.pk, kind=kind, message=why[:4000]) for t in tasks])
        if waiting:
            return True
        Workflow.objects.filter(pk=workflow_pk, status=WorkflowStatus.QUEUED).update(
            status=WorkflowStatus.PENDING,
            admitted_at=now,
            preemptible=preemptible or any(p.preemptible for p in parts),
            queue_reason={},
        )
        enqueue.create_pods(workflow_pk)
    return True


def _named_parts(parts: list[WorkflowPart]) -> str:
    """'task a, b in node pool h100' for the parts named (how reasons say which part holds a workflow)."""
    return "; ".join(f"task {', '.join(p.tasks)} in node pool {p.node_pool}" for p in parts)


def hold(workflow_pk: int, reason: dict) -> bool:
    """Record why a QUEUED workflow waits (written only when it changed). True when written."""
    return bool(
        Workflow.objects.filter(pk=workflow_pk, status=WorkflowStatus.QUEUED)
        .exclude(queue_reason=reason)
        .update(queue_reason=reason)
    )


def preempt(workflow_pk: int, reason: dict) -> str:
    """Stop an admitted workflow to give its capacity back, or release every reservation of a QUEUED one whose
    part was taken as a victim (module docstring): all its parts release. Returns its new status (QUEUED or
    FAILED_PREEMPTED), or "" when it was neither admitted and unfinished, nor holding a reservation, any more."""
    now = timezone.now()
    text = str(reason.get("text") or "preempted")
    limit = settings.WORKFLOW_MAX_RETRIES_PER_TASK
    with transaction.atomic():
        status = _locked_status(workflow_pk)
        if status == WorkflowStatus.QUEUED:
            return _release(workflow_pk, reason, now)
        if status not in ADMITTED:
            return ""
        workflow = Workflow.objects.select_related("pool").get(pk=workflow_pk)
        tasks = list(workflow.tasks.filter(status__in=UNFINISHED).order_by("id"))
        # PENDING tasks too: a pod being created now finds its task changed and deletes it (create._record_created)
        targets = [(t.namespace, t.pod_name) for t in tasks]
        again = []
        for task in tasks:
            task.workflow = workflow
            action, source = exit_action(PREEMPTED_EXIT_CODE, task.exit_actions, workflow.pool.default_exit_actions)
            transition(
                task,
                UNFINISHED,
                status=TaskStatus.FAILED_PREEMPTED,
                exit_code=PREEMPTED_EXIT_CODE,
                finished_at=now,
                error=f"{text} (exit code {PREEMPTED_EXIT_CODE}; {source}: {action})"[:4000],
            )
            record_event(task, "PREEMPTED", f"{text} (exit code {PREEMPTED_EXIT_CODE}; {source}: {action})")
            again.append(action == RESCHEDULE and task.retry_id < limit)
        delete_later(workflow.pool.backend_id, targets, "preempted")
        record = {**reason, "at": now.isoformat(), "count": int(workflow.preemption.get("count", 0)) + 1}
        if tasks and all(again):
            for task in tasks:
                _requeue(task, text)
            WorkflowPart.objects.filter(workflow_id=workflow_pk).update(admitted_at=None, preemptible=False)
            Workflow.objects.filter(pk=workflow_pk).update(
                status=WorkflowStatus.QUEUED, admitted_at=None, preemptible=False, preemption=record, queue_reason={}
            )
            return WorkflowStatus.QUEUED
        Workflow.objects.filter(pk=workflow_pk).update(
            status=WorkflowStatus.FAILED_PREEMPTED, finished_at=now, error=text[:4000], preemption=record
        )
        announce_finished(workflow_pk)
    return WorkflowStatus.FAILED_PREEMPTED


def _release(workflow_pk: int, reason: dict, now) -> str:
    """A QUEUED workflow's reservations taken back (the caller holds its row): every part waits again."""
    released = WorkflowPart.objects.filter(workflow_id=workflow_pk, admitted_at__isnull=False).update(
        admitted_at=None, preemptible=False
    )
    if not released:
        return ""
    previous = Workflow.objects.filter(pk=workflow_pk).values_list("preemption", flat=True).first() or {}
    record = {**reason, "at": now.isoformat(), "count": int(previous.get("count", 0)) + 1, "released": True}
    Workflow.objects.filter(pk=workflow_pk).update(preemption=record)
    return WorkflowStatus.QUEUED


def _requeue(task: Task, why: str) -> None:
    """A preempted task back to PENDING as its next attempt, like a RESCHEDULE exit action; its workflow waits
    QUEUED for admission to create it."""
    moved = next_attempt(task, (TaskStatus.FAILED_PREEMPTED,))
    if moved is None:
        return
    retry, new_name, note = moved
    record_event(
        task,
        "RESCHEDULED",
        f"preempted; exit action RESCHEDULE: retry {retry} of {settings.WORKFLOW_MAX_RETRIES_PER_TASK} as pod "
        f"{new_name}, queued again for admission{note}",
    )


def expire_queued(now=None) -> int:
    """QUEUED workflows whose queue timeout has passed since submission → FAILED_QUEUE_TIMEOUT. How many."""
    now = now or timezone.now()
    rows = Workflow.objects.filter(
        status=WorkflowStatus.QUEUED, queue_timeout_seconds__isnull=False, created_at__lte=now
    ).values_list("pk", "created_at", "queue_timeout_seconds")
    return sum(
        _time_out(pk, timedelta(seconds=seconds), now)
        for pk, created, seconds in rows
        if created + timedelta(seconds=seconds) <= now
    )


def _time_out(workflow_pk: int, limit: timedelta, now) -> bool:
    with transaction.atomic():
        if _locked_status(workflow_pk) != WorkflowStatus.QUEUED:
            return False
        last = Workflow.objects.filter(pk=workflow_pk).values_list("queue_reason", flat=True).first() or {}
        reason = f"queue timeout: not admitted {format_duration(limit)} after submission" + (
            f" (last: {last['text']})" if last.get("text") else ""
        )
        tasks = list(Task.objects.filter(workflow_id=workflow_pk, status=PENDING).only("pk"))
        Task.objects.filter(pk__in=[t.pk for t in tasks], status=PENDING).update(
            status=TaskStatus.FAILED_QUEUE_TIMEOUT, finished_at=now, error=reason[:4000]
        )
        record_events([TaskEvent(task_id=t.pk, kind="QUEUE_TIMEOUT", message=reason) for t in tasks])
        Workflow.objects.filter(pk=workflow_pk).update(
            status=WorkflowStatus.FAILED_QUEUE_TIMEOUT, finished_at=now, error=reason[:4000]
        )
        announce_finished(workflow_pk)
    return True
