"""A finished pod's outcome: its exit code → COMPLETE, FAIL or RESCHEDULE (the task's exitActions, else the
pool's default_exit_actions, else the exit status); a RESCHEDULE sends the task back to PENDING as a new pod."""

from __future__ import annotations

import copy

from django.conf import settings
from django.utils import timezone

from clusters.kube import pods
from pools.confinement import carried_selector
from pools.engine.resolve import pod_name
from portal.errors import PortalError
from workflows import enqueue
from workflows.lifecycle.transitions import (
    ACTIVE,
    PENDING,
    backend_of,
    delete_later,
    happened,
    record_event,
    transition,
)
from workflows.models import Task, TaskStatus
from workflows.services import resolve_retry

COMPLETE, FAIL, RESCHEDULE = "COMPLETE", "FAIL", "RESCHEDULE"


def finish(task: Task, state: pods.PodState) -> bool:
    code = state.exit_code
    action, source = exit_action(code, task.exit_actions, task.workflow.pool.default_exit_actions)
    if code is None:
        describe = f"ended {state.phase}" + (
            f" ({state.reason}: {state.message})".replace(": )", ")") if state.reason else " without an exit code"
        )
    else:
        describe = f"exited with code {code}" + (
            f" ({state.reason})" if state.reason not in ("", "Completed", "Error") else ""
        )
    limit = settings.WORKFLOW_MAX_RETRIES_PER_TASK
    if action == RESCHEDULE:
        if task.retry_id < limit:
            return reschedule(task, f"{describe}; {source}: RESCHEDULE", at=happened(task, state.finished_at))
        action, source = FAIL, f"{source}: RESCHEDULE, but all {limit} retries are used"
    status = TaskStatus.COMPLETED if action == COMPLETE else TaskStatus.FAILED
    values = {
        "status": status,
        "exit_code": code,
        "exit_reason": state.reason[:64],
        "exit_message": state.message[:4000],
        "finished_at": happened(task, state.finished_at) or timezone.now(),
        "error": "" if status == TaskStatus.COMPLETED else f"{describe} ({source}: {action})",
    }
    if not task.started_at and state.started_at:
        values["started_at"] = happened(task, state.started_at)
    if not task.node and state.node:
        values["node"] = state.node
    if not transition(task, ACTIVE, **values):
        return False
    record_event(task, "EXITED", f"{describe}: {status} ({source}: {action})", at=task.finished_at)
    return True


def reschedule(task: Task, why: str, at=None) -> bool:
    old_name = task.pod_name
    moved = next_attempt(task, ACTIVE)
    if moved is None:
        return False
    retry, new_name, note = moved
    record_event(
        task,
        "RESCHEDULED",
        f"{why}: retry {retry} of {settings.WORKFLOW_MAX_RETRIES_PER_TASK} as pod {new_name}{note}",
        at=at,
    )
    delete_later(backend_of(task), [(task.namespace, old_name)], "rescheduled")
    enqueue.create_pods(task.workflow_id)
    return True


def next_attempt(task: Task, from_statuses) -> tuple[int, str, str] | None:
    """The task back to PENDING as its next attempt (new pod name, pod resolved again) if it is still in one
    of `from_statuses`: (retry, new pod name, note for the event), or None when another writer moved it."""
    retry = task.retry_id + 1
    new_name = pod_name(task.workflow.workflow_id, task.name, retry)
    pod, note = retry_pod(task, retry, new_name)
    moved = transition(
        task,
        from_statuses,
        status=PENDING,
        retry_id=retry,
        pod_name=new_name,
        pod=pod,
        node="",
        pod_uid="",
        exit_code=None,
        exit_reason="",
        exit_message="",
        started_at=None,
        finished_at=None,
        pod_created_at=None,
        error="",
    )
    return (retry, new_name, note) if moved else None


def retry_pod(task: Task, retry: int, name: str) -> tuple[dict, str]:
    """The next attempt's pod (resolved again, with `WF_RETRY_ID` = `retry`) and a note for the event; the
    first attempt's pod under the new name when the task no longer resolves (its config changed since)."""
    try:
        return carried_selector(resolve_retry(task.workflow, task, retry), task.pod), ""
    except PortalError as error:
        pod = copy.deepcopy(task.pod)
        pod.setdefault("metadata", {})["name"] = name
        return pod, f" (with the first attempt's pod: the task no longer resolves: {error})"


def exit_action(
    code: int | None, task_actions: dict | None, pool_actions: dict | None, *, also: tuple[int | None, ...] = ()
) -> tuple[str, str]:
    """(COMPLETE|FAIL|RESCHEDULE, where it came from): the task's exitActions, else the pool's
    default_exit_actions, else the status as reported (0 completes, anything else fails). `also`: more codes
    the same outcome answers to, after `code` within each source (a spot interruption: 3001, then the
    container's 143)."""
    codes = [c for c in (code, *also) if c is not None]
    for actions, source in (
        (task_actions, "the task's exitActions"),
        (pool_actions, "the pool's default_exit_actions"),
    ):
        for candidate in codes:
            for action, listed in (actions or {}).items():
                if candidate in exit_codes(listed):
                    return action.upper(), source
    return (COMPLETE if code == 0 else FAIL), "the exit status"


def exit_codes(text: object) -> set[int]:
    """'0,1-10,16' → {0, 1, …, 10, 16} (validated at submission and config save)."""
    codes: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            codes.update(range(int(low), int(high or low) + 1))
    return codes
