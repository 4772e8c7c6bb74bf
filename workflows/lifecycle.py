"""What happens to a workflow after it is stored: pods created, pod status folded back into tasks, exit
actions, the workflow's status derived from its tasks, cancel.

Every state change is a conditional UPDATE (`_transition`: `WHERE pk = … AND pod_name = … AND status IN …`),
so the same observation applied twice (a watch event and the reconciler, a redelivered Celery message,
two workers) changes the row and writes its TaskEvent once. Pods have deterministic names and carry
the portal's ownership labels, so creating one twice finds the first (`clusters.kube.pods.create_pod`).

Task statuses: PENDING (no pod yet) → WAITING (pod created, not running) → RUNNING → COMPLETED / FAILED,
or FAILED_QUEUE_TIMEOUT / FAILED_EXEC_TIMEOUT (`workflows.timeouts`), FAILED_BACKEND_ERROR (the cluster
refused the pod, or it vanished), CANCELLED. A RESCHEDULE exit action sends the task back to PENDING with
`retry_id + 1` and a new pod name (`<workflow>-<task>-r<N>`).

A workflow fails fast: when a task that counts ends in a failure, its unfinished siblings are stopped
(CANCELLED, pods deleted) and the workflow takes the failing task's status. In a group with
`ignoreNonleadStatus` (OSMO's default) only the lead counts, and the lead finishing stops the group's
other tasks (a server beside a client, say); see `settle`. Pods are deleted by the Celery task
`workflows.tasks.delete_pods`, enqueued after commit; the reaper (`workflows.reconcile.reap`) deletes
whatever is left.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from access import actions, policy
from clusters.kube import pods
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from pools.engine import k8s_name
from pools.engine.resolve import label_value, pod_name
from portal.errors import PortalError
from workflows import enqueue
from workflows.errors import WorkflowFinished, WorkflowNotFound
from workflows.models import (
    FINISHED_TASK,
    FINISHED_WORKFLOW,
    Task,
    TaskEvent,
    TaskStatus,
    Workflow,
    WorkflowStatus,
)
from workflows.services import resolve_retry

log = logging.getLogger(__name__)

CANCEL = actions.WORKFLOW_CANCEL
PENDING, WAITING, RUNNING = TaskStatus.PENDING, TaskStatus.WAITING, TaskStatus.RUNNING
UNFINISHED = (PENDING, WAITING, RUNNING)
ACTIVE = (WAITING, RUNNING)  # a pod exists
FAILURES = frozenset(FINISHED_TASK) - {TaskStatus.COMPLETED, TaskStatus.CANCELLED}
COMPLETE, FAIL, RESCHEDULE = "COMPLETE", "FAIL", "RESCHEDULE"


def instance() -> str:
    """This portal's value of the `pool-portal/instance` label."""
    return label_value(settings.PORTAL_INSTANCE) or "default"


def manifest(task: Task) -> dict:
    """The pod to create: the stored `Task.pod`, exactly, plus the instance label."""
    pod = copy.deepcopy(task.pod)
    metadata = pod.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), pods.INSTANCE_LABEL: instance()}
    return pod


def container_of(task: Task) -> str:
    return k8s_name(task.name)


# ------------------------------------------------------------------------------------------ helpers


def _event(task: Task, kind: str, message: str = "", at=None) -> None:
    """Record what happened to `task`; `at`: when it happened (the cluster's time), else now (the portal's act)."""
    TaskEvent.objects.create(task=task, kind=kind, message=message[:4000], at=at or timezone.now())


def _happened(task: Task, cluster_time):
    """When the cluster says something happened to `task`'s pod, but never before the task was submitted: the
    API's times have whole seconds (and a cluster's clock may lag ours), and a pod cannot act before its task
    exists. Events of the same second then keep the order in which they happened (`TaskEvent` id)."""
    if cluster_time is None:
        return None
    return max(cluster_time, task.created_at) if task.created_at else cluster_time


_TASK_FIELDS = ("status", "pod_name", "pod", "retry_id", "node", "pod_uid", "exit_code", "error", "pod_created_at",
                "started_at", "finished_at")


def _lock(task: Task) -> bool:
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


def _transition(task: Task, from_statuses, *conditions: Q, **values) -> bool:
    """UPDATE the task only if it still has its pod name, one of `from_statuses` and `conditions`; mirror on the
    object. Under `_lock` this is belt and braces: it also keeps a stale caller from writing twice."""
    updated = Task.objects.filter(*conditions, pk=task.pk, pod_name=task.pod_name,
                                  status__in=list(from_statuses)).update(**values)
    if updated:
        for key, value in values.items():
            setattr(task, key, value)
    return bool(updated)


def _delete_later(backend_id: int, targets: list[tuple[str, str]], why: str) -> None:
    """Delete pods after commit, through Celery (retried while the cluster is unreachable)."""
    if targets:
        enqueue.delete_pods(backend_id, targets, why)


def _create_later(workflow_pk: int) -> None:
    enqueue.create_pods(workflow_pk)


def fail_task(task: Task, status: str, reason: str, *, kind: str, from_statuses=UNFINISHED,
              delete_pod: bool = False) -> bool:
    """End `task` with a failure `status` (guarded); optionally delete its pod; then settle the workflow."""
    now = timezone.now()
    with transaction.atomic():
        if not _lock(task) or not _transition(task, from_statuses, status=status, error=reason[:4000],
                                              finished_at=now):
            return False
        _event(task, kind, reason)
        if delete_pod:
            _delete_later(_backend_id(task), [(task.namespace, task.pod_name)], kind.lower())
        settle(task.workflow_id)
    return True


def fail_pending(workflow_pk: int, reason: str) -> int:
    """Creating pods kept failing (transient errors, retries exhausted): tasks without a pod fail."""
    tasks = list(Task.objects.select_related("workflow__pool").filter(workflow_id=workflow_pk, status=PENDING))
    return sum(fail_task(task, TaskStatus.FAILED_BACKEND_ERROR, reason, kind="BACKEND_ERROR",
                         from_statuses=(PENDING,)) for task in tasks)


def _backend_id(task: Task) -> int:
    workflow = task.workflow  # select_related by every caller that passes a task here
    return workflow.pool.backend_id


# ------------------------------------------------------------------------------------------ pod creation


@dataclass
class CreateResult:
    created: int = 0  # pods created now
    adopted: int = 0  # pods that already existed (an earlier attempt created them)
    failed: int = 0  # tasks failed by a refusal (4xx, someone else's pod)


def create_pods(workflow_pk: int, *, connect_to=connect) -> CreateResult:
    """Create the pods of the workflow's PENDING tasks. Idempotent; raises KubeError only when transient.

    A 4xx refusal (invalid pod, forbidden, quota) or a pod of the same name owned by someone else fails
    that task (FAILED_BACKEND_ERROR with the API's message). A transient error stops here and propagates,
    for Celery to retry: tasks already created are WAITING and are skipped next time.
    """
    result = CreateResult()
    workflow = Workflow.objects.select_related("pool__backend").filter(pk=workflow_pk).first()
    if workflow is None or workflow.is_finished:
        return result
    tasks = list(workflow.tasks.filter(status=PENDING).order_by("id"))
    if not tasks:
        return result
    for task in tasks:
        task.workflow = workflow
    try:
        kube = connect_to(workflow.pool.backend)
    except KubeError as error:
        if error.transient:
            raise
        for task in tasks:  # the backend's connection settings are unusable: retrying will not help
            result.failed += fail_task(task, TaskStatus.FAILED_BACKEND_ERROR, str(error), kind="BACKEND_ERROR",
                                       from_statuses=(PENDING,))
        return result
    try:
        for task in tasks:
            try:
                outcome = pods.create_pod(kube, task.namespace, manifest(task))
            except KubeError as error:
                if error.transient:
                    raise
                result.failed += fail_task(task, TaskStatus.FAILED_BACKEND_ERROR, str(error), kind="BACKEND_ERROR",
                                           from_statuses=(PENDING,))
                continue
            if _record_created(task, outcome):
                if outcome.created:
                    result.created += 1
                else:
                    result.adopted += 1
    finally:
        kube.close()
        settle(workflow.pk)
    return result


def _record_created(task: Task, outcome: pods.Created) -> bool:
    state = pods.pod_state(outcome.pod, container_of(task))
    created_name = task.pod_name
    with transaction.atomic():
        alive = _lock(task)
        if not alive or task.pod_name != created_name:
            # cancelled (or failed, or rescheduled) while we were creating it: the pod is not wanted
            _delete_later(_backend_id(task), [(task.namespace, created_name)], "not wanted any more")
            return False
        if not _transition(task, (PENDING,), status=WAITING, pod_uid=state.uid, pod_created_at=timezone.now(),
                           error=""):
            return False  # another worker recorded it first
        where = f"{task.namespace}/{task.pod_name}"
        _event(task, "CREATED", f"pod {where} created" if outcome.created else
               f"pod {where} already existed (created by an earlier attempt): adopted", at=_happened(task, state.created_at))
    if outcome.created:
        return True
    observe(task, outcome.pod)  # an adopted pod may have moved on already
    return True


# ------------------------------------------------------------------------------------------ status from pods


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
    if task.is_finished:  # as the caller read it; `_lock` re-reads under the workflow lock
        return False
    if raw is None or (deleted and not _terminal(raw)):
        if task.status not in ACTIVE:
            return False
        what = "was deleted" if raw is not None else "no longer exists"
        return fail_task(task, TaskStatus.FAILED_BACKEND_ERROR,
                         f"pod {task.namespace}/{task.pod_name} {what} before it finished (outside the portal)",
                         kind="POD_LOST", from_statuses=ACTIVE)
    state = pods.pod_state(raw, container_of(task))
    changed = False
    with transaction.atomic():
        if not _lock(task) or state.name != task.pod_name:
            return False
        now = timezone.now()
        if task.status == PENDING:  # the pod exists, its creation was never recorded (a worker died after the POST)
            if not _transition(task, (PENDING,), status=WAITING, pod_uid=state.uid, pod_created_at=now):
                return False
            _event(task, "CREATED", f"pod {task.namespace}/{task.pod_name} found in the cluster: adopted",
                   at=_happened(task, state.created_at))
            changed = True
        if state.uid and not task.pod_uid:
            Task.objects.filter(pk=task.pk, pod_name=task.pod_name, pod_uid="").update(pod_uid=state.uid)
            task.pod_uid = state.uid
        if state.node and not task.node:
            clear = {"error": ""} if task.status == WAITING else {}
            if _transition(task, ACTIVE, Q(node=""), node=state.node, **clear):
                _event(task, "SCHEDULED", f"scheduled on node {state.node}", at=_happened(task, state.scheduled_at or state.started_at))
                changed = True
        if task.status == WAITING and not state.terminal:
            # why it is not running yet: not scheduled (PodScheduled=False), or its container waits (image pull)
            reason = (state.unschedulable if not state.node else state.waiting)[:4000]
            # PodScheduled=False dates the first reason; a changed reason (no transition) or a container
            # waiting (no time in the API) is dated when the portal sees it
            since = _happened(task, state.unschedulable_since) if not state.node and not task.error else None
            if reason and reason != task.error and _transition(task, (WAITING,), ~Q(error=reason), error=reason):
                _event(task, "UNSCHEDULABLE" if not state.node else "WAITING", reason, at=since)
                changed = True
        started = state.running or (state.terminal and state.started_at)
        if task.status == WAITING and started and _transition(task, (WAITING,), status=RUNNING,
                                                              started_at=_happened(task, state.started_at) or now,
                                                              error=""):
            _event(task, "RUNNING", f"running on node {task.node or state.node}", at=task.started_at)
            changed = True
        if state.terminal:
            changed = _finish(task, state) or changed
        if changed:
            settle(task.workflow_id)
    return changed


def _terminal(raw: dict) -> bool:
    return ((raw.get("status") or {}).get("phase") or "") in pods.TERMINAL_PHASES


def _finish(task: Task, state: pods.PodState) -> bool:
    code = state.exit_code
    action, source = exit_action(code, task.exit_actions, task.workflow.pool.default_exit_actions)
    if code is None:
        describe = f"ended {state.phase}" + (f" ({state.reason}: {state.message})".replace(": )", ")")
                                             if state.reason else " without an exit code")
    else:
        describe = f"exited with code {code}" + (f" ({state.reason})" if state.reason not in ("", "Completed",
                                                                                               "Error") else "")
    limit = settings.WORKFLOW_MAX_RETRIES_PER_TASK
    if action == RESCHEDULE:
        if task.retry_id < limit:
            return _reschedule(task, f"{describe}; {source}: RESCHEDULE", at=_happened(task, state.finished_at))
        action, source = FAIL, f"{source}: RESCHEDULE, but all {limit} retries are used"
    status = TaskStatus.COMPLETED if action == COMPLETE else TaskStatus.FAILED
    values = {"status": status, "exit_code": code, "finished_at": _happened(task, state.finished_at) or timezone.now(),
              "error": "" if status == TaskStatus.COMPLETED else f"{describe} ({source}: {action})"}
    if not task.started_at and state.started_at:
        values["started_at"] = _happened(task, state.started_at)
    if not task.node and state.node:
        values["node"] = state.node
    if not _transition(task, ACTIVE, **values):
        return False
    _event(task, "EXITED", f"{describe}: {status} ({source}: {action})", at=task.finished_at)
    return True


def _reschedule(task: Task, why: str, at=None) -> bool:
    old_name, retry = task.pod_name, task.retry_id + 1
    new_name = pod_name(task.workflow.workflow_id, task.name, retry)
    pod, note = _retry_pod(task, retry, new_name)
    if not _transition(task, ACTIVE, status=PENDING, retry_id=retry, pod_name=new_name, pod=pod, node="",
                       pod_uid="", exit_code=None, started_at=None, finished_at=None, pod_created_at=None, error=""):
        return False
    _event(task, "RESCHEDULED", f"{why}: retry {retry} of {settings.WORKFLOW_MAX_RETRIES_PER_TASK} as pod "
                                f"{new_name}{note}", at=at)
    _delete_later(_backend_id(task), [(task.namespace, old_name)], "rescheduled")
    _create_later(task.workflow_id)
    return True


def _retry_pod(task: Task, retry: int, name: str) -> tuple[dict, str]:
    """The next attempt's pod (resolved again, with `WF_RETRY_ID` = `retry`) and a note for the event; the
    first attempt's pod under the new name when the task no longer resolves (its config changed since)."""
    try:
        return resolve_retry(task.workflow, task, retry), ""
    except PortalError as error:
        pod = copy.deepcopy(task.pod)
        pod.setdefault("metadata", {})["name"] = name
        return pod, f" (with the first attempt's pod: the task no longer resolves: {error})"


def exit_action(code: int | None, task_actions: dict | None, pool_actions: dict | None) -> tuple[str, str]:
    """(COMPLETE|FAIL|RESCHEDULE, where it came from): the task's exitActions, else the pool's
    default_exit_actions, else the status as reported (0 completes, anything else fails)."""
    if code is not None:
        for actions, source in ((task_actions, "the task's exitActions"),
                                (pool_actions, "the pool's default_exit_actions")):
            for action, codes in (actions or {}).items():
                if code in exit_codes(codes):
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


# ------------------------------------------------------------------------------------------ the workflow


def settle(workflow_pk: int) -> str:
    """Derive the workflow's status from its tasks (and stop what must stop). Returns the status.

    PENDING: no pod created yet; WAITING: pods created, none running yet; RUNNING: some task running or
    done while others are not; then COMPLETED (all completed), the first failing task's status, or
    CANCELLED. A finished workflow never changes again.

    Groups (OSMO): in a group with `ignoreNonleadStatus` (the default) only the lead task's outcome
    counts, and when the lead finishes the group's other tasks are stopped; without it every task of the
    group counts. A task that counts and fails stops the whole workflow (fail fast).
    """
    with transaction.atomic():
        current = Workflow.objects.select_for_update().filter(pk=workflow_pk).values_list("status", flat=True).first()
        if current is None or current in FINISHED_WORKFLOW:
            return current or ""
        return _settle(workflow_pk)


def _counts(row: dict) -> bool:
    """Does this task's outcome decide its group's (and so the workflow's)?"""
    return row["lead"] or not row["ignore_non_lead_status"]


def _settle(workflow_pk: int) -> str:
    rows = list(Task.objects.filter(workflow_id=workflow_pk).order_by("id").values(
        "pk", "name", "status", "started_at", "finished_at", "error", "namespace", "pod_name", "group_name", "lead",
        "ignore_non_lead_status"))
    counting = [r for r in rows if _counts(r)]
    failed = sorted((r for r in counting if r["status"] in FAILURES),
                    key=lambda r: (r["finished_at"] or timezone.now(), r["pk"]))
    unfinished = [r for r in rows if r["status"] in UNFINISHED]
    if failed and unfinished:
        _stop(workflow_pk, unfinished, f"stopped: task {failed[0]['name']} ended {failed[0]['status']}")
        return _settle(workflow_pk)
    if _stop_after_leads(workflow_pk, rows, unfinished):
        return _settle(workflow_pk)
    all_finished = not unfinished
    # Once everything has finished, only the tasks that count decide (a stopped or failed non-lead does not).
    status = derive_status([r["status"] for r in (counting if all_finished else rows)])
    started = [r["started_at"] for r in rows if r["started_at"]]
    values: dict = {"status": status}
    if started:
        values["started_at"] = min(started)
    if status in FINISHED_WORKFLOW:
        values["finished_at"] = max((r["finished_at"] for r in rows if r["finished_at"]), default=timezone.now())
        if failed:
            values["error"] = f"task {failed[0]['name']}: {failed[0]['error']}"[:4000]
    Workflow.objects.filter(pk=workflow_pk).exclude(status__in=list(FINISHED_WORKFLOW)).exclude(
        **{key: value for key, value in values.items() if key != "error"}).update(**values)
    return status


def _stop_after_leads(workflow_pk: int, rows: list[dict], unfinished: list[dict]) -> bool:
    """Stop the unfinished tasks of every `ignoreNonleadStatus` group whose lead has finished."""
    finished_leads = {r["group_name"]: r for r in rows
                      if r["lead"] and r["ignore_non_lead_status"] and r["status"] in FINISHED_TASK}
    stopped = False
    for group, lead in finished_leads.items():
        rest = [r for r in unfinished if r["group_name"] == group]
        if rest:
            _stop(workflow_pk, rest, f"stopped: lead task {lead['name']} of group {group} ended {lead['status']}")
            stopped = True
    return stopped


def derive_status(statuses: list[str]) -> str:
    if not statuses:
        return WorkflowStatus.PENDING
    if all(s in FINISHED_TASK for s in statuses):
        for status in statuses:
            if status in FAILURES:
                return WorkflowStatus(status)
        if TaskStatus.CANCELLED in statuses:
            return WorkflowStatus.CANCELLED
        return WorkflowStatus.COMPLETED
    if any(s == RUNNING or s in FINISHED_TASK for s in statuses):
        return WorkflowStatus.RUNNING
    if all(s == PENDING for s in statuses):
        return WorkflowStatus.PENDING
    return WorkflowStatus.WAITING


def _stop(workflow_pk: int, rows: list[dict], reason: str) -> None:
    """Cancel unfinished tasks (guarded per row) and delete their pods after commit. Runs inside `settle`'s
    transaction, under the workflow lock."""
    now = timezone.now()
    stopped, targets = [], []
    for row in rows:
        updated = Task.objects.filter(pk=row["pk"], pod_name=row["pod_name"], status=row["status"]).update(
            status=TaskStatus.CANCELLED, finished_at=now, error=reason)
        if updated:
            stopped.append(TaskEvent(task_id=row["pk"], kind="STOPPED", message=reason))
            if row["status"] in ACTIVE:
                targets.append((row["namespace"], row["pod_name"]))
    TaskEvent.objects.bulk_create(stopped)
    if targets:
        backend_id = Workflow.objects.filter(pk=workflow_pk).values_list("pool__backend_id", flat=True).first()
        _delete_later(backend_id, targets, "stopped")


# ------------------------------------------------------------------------------------------ cancel


def missing(workflow_id: str) -> WorkflowNotFound:
    """The answer for an unknown workflow, and for one the asker may not see (workflows.queries)."""
    return WorkflowNotFound(f"no workflow {workflow_id!r}", field="workflow_id", value=workflow_id)


def get_workflow(workflow_id: str) -> Workflow:
    if not workflow_id or "\x00" in workflow_id:  # no id has one (PostgreSQL refuses NUL in text)
        raise missing(workflow_id)
    workflow = (Workflow.objects.select_related("pool", "submitted_by", "project").filter(workflow_id=workflow_id)
                .first())
    if workflow is None:
        raise missing(workflow_id)
    return workflow


def cancel_refusal(workflow: Workflow, who) -> str:
    """Why `who` may not cancel `workflow` ("" when it may): it must be the submitter, or hold
    `workflow:Cancel` on the workflow's pool."""
    decision = policy.decide(who, CANCEL, obj=workflow)
    if decision.allowed:
        return ""
    return f"{policy.principal(who).name} {_cancel_refusal(workflow)}: {'; '.join(decision.because)}"


def _cancel_refusal(workflow: Workflow) -> str:
    return f"may not cancel workflow {workflow.workflow_id} (not its submitter)"


def cancel(workflow_id: str, who=None, *, force: bool = False, message: str = "") -> Workflow:
    """Cancel a workflow: unfinished tasks → CANCELLED, pods deleted (after commit, through Celery).

    `who`: a request/user/principal, authorized by `access.policy` (`workflow:Cancel` on `pool/<pool>`,
    or being the submitter); None is the command line (the operator). A finished workflow is refused
    with 409 `workflow_finished` unless `force`, which deletes whatever pods it still has.
    """
    workflow = get_workflow(workflow_id)
    by = "the command line"
    if who is not None:
        by = policy.principal(who).name
        policy.require(who, CANCEL, obj=workflow, target=actions.workflow(workflow_id),
                       refusal=_cancel_refusal(workflow), field="workflow_id", value=workflow_id)
    if workflow.is_finished and not force:
        raise WorkflowFinished(f"workflow {workflow_id} has already finished ({workflow.status}); "
                               "cancel with force to delete any pods it left behind",
                               field="workflow_id", value=workflow_id)
    reason = f"cancelled by {by}" + (f": {message}" if message else "")
    now = timezone.now()
    with transaction.atomic():
        Workflow.objects.select_for_update().filter(pk=workflow.pk).values_list("pk").first()  # see `_lock`
        tasks = list(Task.objects.filter(workflow=workflow).order_by("id").only(
            "pk", "status", "namespace", "pod_name", "pod_created_at"))
        cancelled = [t for t in tasks if t.status in UNFINISHED]
        Task.objects.filter(pk__in=[t.pk for t in cancelled], status__in=UNFINISHED).update(
            status=TaskStatus.CANCELLED, finished_at=now, error=reason)
        TaskEvent.objects.bulk_create([TaskEvent(task=t, kind="CANCELLED", message=reason) for t in cancelled])
        Workflow.objects.filter(pk=workflow.pk).exclude(status__in=list(FINISHED_WORKFLOW)).update(
            status=WorkflowStatus.CANCELLED, finished_at=now, error=reason)
        # only pods we created or adopted (never someone else's pod that a task collided with)
        _delete_later(workflow.pool.backend_id, [(t.namespace, t.pod_name) for t in tasks
                                                 if t.status != PENDING and t.pod_created_at is not None], "cancelled")
    workflow.refresh_from_db()
    return workflow
