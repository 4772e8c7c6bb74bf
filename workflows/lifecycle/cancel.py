"""Cancelling a workflow (its unfinished tasks CANCELLED, its pods deleted), and who may."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from access import actions, policy
from workflows.errors import WorkflowFinished
from workflows.lifecycle.transitions import PENDING, UNFINISHED, delete_later, record_events
from workflows.models import FINISHED_WORKFLOW, Task, TaskEvent, TaskStatus, Workflow, WorkflowStatus
from workflows.queries import get_workflow
from workflows.signals import announce_finished

CANCEL = actions.WORKFLOW_CANCEL


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
        policy.require(
            who,
            CANCEL,
            obj=workflow,
            target=actions.workflow(workflow_id),
            refusal=_cancel_refusal(workflow),
            field="workflow_id",
            value=workflow_id,
        )
    if workflow.is_finished and not force:
        raise WorkflowFinished(
            f"workflow {workflow_id} has already finished ({workflow.status}); "
            "cancel with force to delete any pods it left behind",
            field="workflow_id",
            value=workflow_id,
        )
    reason = f"cancelled by {by}" + (f": {message}" if message else "")
    now = timezone.now()
    with transaction.atomic():
        Workflow.objects.select_for_update().filter(pk=workflow.pk).values_list("pk").first()  # see `transitions.lock`
        tasks = list(
            Task.objects.filter(workflow=workflow)
            .order_by("id")
            .only("pk", "status", "namespace", "pod_name", "pod_created_at")
        )
        cancelled = [t for t in tasks if t.status in UNFINISHED]
        Task.objects.filter(pk__in=[t.pk for t in cancelled], status__in=UNFINISHED).update(
            status=TaskStatus.CANCELLED, finished_at=now, error=reason
        )
        record_events([TaskEvent(task_id=t.pk, kind="CANCELLED", message=reason) for t in cancelled])
        if (
            Workflow.objects.filter(pk=workflow.pk)
            .exclude(status__in=list(FINISHED_WORKFLOW))
            .update(status=WorkflowStatus.CANCELLED, finished_at=now, error=reason, cancelled_by=by)
        ):
            announce_finished(workflow.pk)
        # only pods we created or adopted (never someone else's pod that a task collided with)
        delete_later(
            workflow.pool.backend_id,
            [(t.namespace, t.pod_name) for t in tasks if t.status != PENDING and t.pod_created_at is not None],
            "cancelled",
        )
    workflow.refresh_from_db()
    return workflow
