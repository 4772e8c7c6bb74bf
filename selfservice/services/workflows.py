"""My workflows: which ones a principal may see and cancel (asked of `access.policy`), and cancel itself.

- See: your own workflows always; someone else's when a role allows `workflow:Read` on its pool
  (OSMO's `osmo-user` does, on every pool; a user with no role does not).
- Cancel: you may see it, and you submitted it or a role allows `workflow:Cancel` on its pool (a
  team's `osmo-<team>` grants `workflow:*` on its pools; `osmo-admin` everything). The lifecycle's
  `cancel` decides this again; the page only uses it to show or hide the button.

Cancelling is `workflows.lifecycle.cancel` (tasks and workflow marked, pods deleted after commit).
Where that module is not installed, a fallback cancels a workflow only while none of its pods exists.
"""

from __future__ import annotations

import importlib

import yaml
from django.db import transaction
from django.db.models import Count, Prefetch, Q
from django.utils import timezone

from access import policy
from portal.errors import PermissionDenied
from workflows.errors import WorkflowFinished, WorkflowNotFound
from workflows.models import FINISHED_TASK, Task, TaskEvent, TaskStatus, Workflow, WorkflowStatus
from workflows.queries import check_readable

CANCEL = "workflow:Cancel"


def workflows_of(who, limit: int = 200) -> list[Workflow]:
    """The principal's own workflows, newest first, with their task counts (one query)."""
    subject = policy.principal(who)
    if not subject.user.is_authenticated:
        return []
    return list(Workflow.objects.filter(submitted_by=subject.user.pk).select_related("pool")
                .annotate(task_count=Count("tasks"),
                          finished_tasks=Count("tasks", filter=Q(tasks__status__in=sorted(FINISHED_TASK))))
                .order_by("-created_at", "-id")[:limit])


def get_workflow(workflow_id: str, who, *, with_events: bool = True) -> Workflow:
    """The workflow if the principal may see it (`workflows.queries.check_readable`, as the API): else
    WorkflowNotFound (404) or PermissionDenied (403, saying why)."""
    tasks = Task.objects.order_by("id")
    if with_events:
        tasks = tasks.prefetch_related(Prefetch("events", queryset=TaskEvent.objects.order_by("at", "id")))
    workflow = (Workflow.objects.select_related("pool", "submitted_by")
                .prefetch_related(Prefetch("tasks", queryset=tasks)).filter(workflow_id=workflow_id).first())
    if workflow is None:
        raise WorkflowNotFound(f"no workflow {workflow_id!r}", field="workflow_id", value=workflow_id)
    check_readable(workflow, who, source="page")
    return workflow


def may_see(workflow: Workflow, who) -> bool:
    try:
        check_readable(workflow, who)
    except PermissionDenied:
        return False
    return True


def may_cancel(workflow: Workflow, who) -> bool:
    subject = policy.principal(who)
    if not may_see(workflow, subject):
        return False
    own = subject.user.is_authenticated and workflow.submitted_by_id == subject.user.pk
    return own or subject.decide(CANCEL, f"pool/{workflow.pool.name}").allowed


def resolved_spec_yaml(workflow: Workflow) -> str:
    return yaml.safe_dump(workflow.spec, sort_keys=False, default_flow_style=False, width=100)


def pod_yaml(task: Task) -> str:
    return yaml.safe_dump(task.pod, sort_keys=False, default_flow_style=False, width=100)


def events_of(workflow: Workflow) -> list[tuple[Task, TaskEvent]]:
    rows = [(task, event) for task in workflow.tasks.all() for event in task.events.all()]
    return sorted(rows, key=lambda row: (row[1].at, row[1].pk))


def cancel(workflow_id: str, who, message: str = "") -> Workflow:
    """Cancel a workflow the principal may see and cancel; raises a domain error saying why not."""
    subject = policy.principal(who)
    workflow = get_workflow(workflow_id, subject, with_events=False)  # 404 / 403 for what one may not see
    lifecycle_cancel = _lifecycle_cancel()
    if lifecycle_cancel is not None:
        return lifecycle_cancel(workflow.workflow_id, subject, message=message)
    if not may_cancel(workflow, subject):
        decision = subject.decide(CANCEL, f"pool/{workflow.pool.name}")
        raise PermissionDenied(f"{subject.name} may not cancel workflow {workflow_id}: not its submitter, and "
                               f"{'; '.join(decision.because)}", field="workflow_id", value=workflow_id)
    _cancel_before_pods(workflow.pk, subject.name, message)
    workflow.refresh_from_db()
    return workflow


def _lifecycle_cancel():
    """`workflows.lifecycle.cancel(workflow_id, who, *, message)`, or None where it is not installed."""
    try:
        module = importlib.import_module("workflows.lifecycle")
    except ModuleNotFoundError as error:
        if error.name != "workflows.lifecycle":
            raise
        return None
    return getattr(module, "cancel", None)


def _cancel_before_pods(workflow_pk: int, by: str, message: str) -> None:
    """Fallback: mark tasks and workflow CANCELLED, but only while no pod was created."""
    with transaction.atomic():
        workflow = Workflow.objects.select_for_update().get(pk=workflow_pk)
        if workflow.is_finished:
            raise WorkflowFinished(f"workflow {workflow.workflow_id} has already finished ({workflow.status})",
                                   field="workflow_id", value=workflow.workflow_id)
        tasks = list(Task.objects.select_for_update().filter(workflow=workflow))
        started = [t.name for t in tasks if t.pod_uid or t.pod_created_at or t.status != TaskStatus.PENDING]
        if started:
            raise WorkflowFinished(
                f"pods of task {started[0]} were already created; cancelling a running workflow needs the "
                "pod lifecycle (workflows.lifecycle), which is not installed yet", field="workflow_id",
                value=workflow.workflow_id, code="cancel_unavailable")
        now = timezone.now()
        Task.objects.filter(pk__in=[t.pk for t in tasks]).update(status=TaskStatus.CANCELLED, finished_at=now)
        text = f"cancelled by {by}" + (f": {message}" if message else "")
        TaskEvent.objects.bulk_create([TaskEvent(task=t, kind="CANCELLED", message=text) for t in tasks])
        workflow.status, workflow.finished_at = WorkflowStatus.CANCELLED, now
        workflow.save(update_fields=["status", "finished_at"])
