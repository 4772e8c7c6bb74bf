"""A pod, as a watch event or the reconciler reads it, folded into its task: CREATED → SCHEDULED → (waiting
reasons) → RUNNING → EXITED, each step a guarded transition, so an observation may come twice, late, or skip
states."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from clusters.kube import pods
from pools.engine import k8s_name
from workflows.lifecycle import interruption
from workflows.lifecycle.exits import finish
from workflows.lifecycle.settle import fail_task, settle
from workflows.lifecycle.transitions import (
    ACTIVE,
    PENDING,
    RUNNING,
    WAITING,
    happened,
    lock,
    record_event,
    transition,
)
from workflows.models import Task, TaskStatus


def container_of(task: Task) -> str:
    return k8s_name(task.name)


def find_task(namespace: str, name: str, backend_id: int | None = None) -> Task | None:
    query = Task.objects.select_related("workflow__pool").filter(namespace=namespace, pod_name=name)
    if backend_id is not None:
        query = query.filter(workflow__pool__backend_id=backend_id)
    return query.first()


def apply_pod_event(backend_id: int, event_type: str, raw: dict) -> bool:
    """A watch event of one of our pods → its task. Pods no task knows (any more) are the reaper's."""
    metadata = raw.get("metadata") or {}
    task = find_task(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""), backend_id)
    if task is None:
        return False
    return observe(task, raw, deleted=event_type == "DELETED")


def observe(task: Task, raw: dict | None, *, deleted: bool = False) -> bool:
    """Bring `task` up to date with its pod. `raw` None: the pod does not exist. Returns whether it changed.

    Each step is guarded, so observations may come twice, late, or skip states (a pod seen only once,
    already Succeeded, still yields CREATED/SCHEDULED/RUNNING/EXITED in order).
    """
    if task.is_finished:  # as the caller read it; `lock` re-reads under the workflow lock
        return False
    if raw is None or (deleted and not _terminal(raw)):
        if task.status not in ACTIVE:
            return False
        spot = interruption.of_lost_pod(task, raw)
        if spot is not None:
            return interruption.end_lost(task, spot)
        what = "was deleted" if raw is not None else "no longer exists"
        return fail_task(
            task,
            TaskStatus.FAILED_BACKEND_ERROR,
            f"pod {task.namespace}/{task.pod_name} {what} before it finished (outside the portal)",
            kind="POD_LOST",
            from_statuses=ACTIVE,
        )
    state = pods.pod_state(raw, container_of(task))
    # asked before the lock: it may read the node from the cluster
    spot = interruption.of_pod(task, raw, state) if state.terminal else None
    changed = False
    with transaction.atomic():
        if not lock(task) or state.name != task.pod_name:
            return False
        now = timezone.now()
        if task.status == PENDING:  # the pod exists, its creation was never recorded (a worker died after the POST)
            if not transition(task, (PENDING,), status=WAITING, pod_uid=state.uid, pod_created_at=now):
                return False
            record_event(
                task,
                "CREATED",
                f"pod {task.namespace}/{task.pod_name} found in the cluster: adopted",
                at=happened(task, state.created_at),
            )
            changed = True
        if state.uid and not task.pod_uid:
            Task.objects.filter(pk=task.pk, pod_name=task.pod_name, pod_uid="").update(pod_uid=state.uid)
            task.pod_uid = state.uid
        if state.node and not task.node:
            clear = {"error": ""} if task.status == WAITING else {}
            if transition(task, ACTIVE, Q(node=""), node=state.node, **clear):
                record_event(
                    task,
                    "SCHEDULED",
                    f"scheduled on node {state.node}",
                    at=happened(task, state.scheduled_at or state.started_at),
                )
                changed = True
        if task.status == WAITING and not state.terminal:
            # why it is not running yet: not scheduled (PodScheduled=False), or its container waits (image pull)
            reason = (state.unschedulable if not state.node else state.waiting)[:4000]
            # PodScheduled=False dates the first reason; a changed reason (no transition) or a container
            # waiting (no time in the API) is dated when the portal sees it
            if reason and reason != task.error:  # dated (one query) only when there is something to record
                since = happened(task, state.unschedulable_since) if not state.node and not task.error else None
                if transition(task, (WAITING,), ~Q(error=reason), error=reason):
                    record_event(task, "UNSCHEDULABLE" if not state.node else "WAITING", reason, at=since)
                    changed = True
        started = state.running or (state.terminal and state.started_at)
        if (
            task.status == WAITING
            and started
            and transition(
                task, (WAITING,), status=RUNNING, started_at=happened(task, state.started_at) or now, error=""
            )
        ):
            record_event(task, "RUNNING", f"running on node {task.node or state.node}", at=task.started_at)
            changed = True
        if state.terminal:
            changed = (interruption.end(task, spot) if spot else finish(task, state)) or changed
        if changed:
            settle(task.workflow_id)
    return changed


def _terminal(raw: dict) -> bool:
    return ((raw.get("status") or {}).get("phase") or "") in pods.TERMINAL_PHASES
