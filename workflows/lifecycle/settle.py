"""A workflow's status derived from its tasks, and what must stop when a task that counts has ended; `fail_task`
ends one task with a failure and settles its workflow."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from workflows import enqueue, group_dns
from workflows.lifecycle.transitions import (
    ACTIVE,
    FAILURES,
    PENDING,
    RUNNING,
    UNFINISHED,
    backend_of,
    delete_later,
    lock,
    record_event,
    record_events,
    transition,
)
from workflows.models import (
    FINISHED_TASK,
    FINISHED_WORKFLOW,
    Task,
    TaskEvent,
    TaskStatus,
    Workflow,
    WorkflowStatus,
)
from workflows.signals import announce_finished


def fail_task(
    task: Task, status: str, reason: str, *, kind: str, from_statuses=UNFINISHED, delete_pod: bool = False
) -> bool:
    """End `task` with a failure `status` (guarded); optionally delete its pod; then settle the workflow."""
    now = timezone.now()
    with transaction.atomic():
        if not lock(task) or not transition(task, from_statuses, status=status, error=reason[:4000], finished_at=now):
            return False
        record_event(task, kind, reason)
        if delete_pod:
            delete_later(backend_of(task), [(task.namespace, task.pod_name)], kind.lower())
        settle(task.workflow_id)
    return True


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
        if current == WorkflowStatus.QUEUED:  # only admission moves it on (workflows.lifecycle.admit_hold_preempt)
            return current
        return _settle(workflow_pk)


def _counts(row: dict) -> bool:
    """Does this task's outcome decide its group's (and so the workflow's)?"""
    return row["lead"] or not row["ignore_non_lead_status"]


def _settle(workflow_pk: int) -> str:
    rows = list(
        Task.objects.filter(workflow_id=workflow_pk)
        .order_by("id")
        .values(
            "pk",
            "name",
            "status",
            "started_at",
            "finished_at",
            "error",
            "namespace",
            "pod_name",
            "group_name",
            "lead",
            "ignore_non_lead_status",
        )
    )
    counting = [r for r in rows if _counts(r)]
    failed = sorted(
        (r for r in counting if r["status"] in FAILURES), key=lambda r: (r["finished_at"] or timezone.now(), r["pk"])
    )
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
    updated = (
        Workflow.objects.filter(pk=workflow_pk)
        .exclude(status__in=list(FINISHED_WORKFLOW))
        .exclude(**{key: value for key, value in values.items() if key != "error"})
        .update(**values)
    )
    if updated and status in FINISHED_WORKFLOW:
        _drop_leftovers(workflow_pk, rows)
        announce_finished(workflow_pk)
    return status


def _drop_leftovers(workflow_pk: int, rows: list[dict]) -> None:
    """A finished workflow's credential Secrets (workflows.credentials) and group Services (workflows.group_dns)
    go, after commit."""
    networked = group_dns.networked_groups(row["group_name"] for row in rows)
    found = (
        Workflow.objects.filter(pk=workflow_pk).values_list("credential_secrets", "uuid", "pool__backend_id").first()
    )
    if not found:
        return
    credential_secrets, workflow_uuid, backend_id = found
    if credential_secrets:
        names = [secret["name"] for secret in credential_secrets]
        namespaces = sorted({row["namespace"] for row in rows})
        enqueue.delete_secrets(backend_id, [(ns, name) for ns in namespaces for name in names], "workflow finished")
    if networked:
        wanted = {(r["namespace"], r["group_name"]) for r in rows if r["group_name"] in networked}
        targets = sorted((namespace, group_dns.subdomain(str(workflow_uuid), group)) for namespace, group in wanted)
        enqueue.delete_services(backend_id, targets, "workflow finished")


def _stop_after_leads(workflow_pk: int, rows: list[dict], unfinished: list[dict]) -> bool:
    """Stop the unfinished tasks of every `ignoreNonleadStatus` group whose lead has finished."""
    finished_leads = {
        r["group_name"]: r for r in rows if r["lead"] and r["ignore_non_lead_status"] and r["status"] in FINISHED_TASK
    }
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
            status=TaskStatus.CANCELLED, finished_at=now, error=reason
        )
        if updated:
            stopped.append(TaskEvent(task_id=row["pk"], kind="STOPPED", message=reason))
            if row["status"] in ACTIVE:
                targets.append((row["namespace"], row["pod_name"]))
    record_events(stopped)
    if targets:
        backend_id = Workflow.objects.filter(pk=workflow_pk).values_list("pool__backend_id", flat=True).first()
        delete_later(backend_id, targets, "stopped")
