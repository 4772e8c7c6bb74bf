"""What a notification says: a subject line and a few lines of text, the same for email and Slack.

Only what the workflow's submitter may read anyway: its id, pool, status, its own error and a link to its page
(why it waits may name other teams' quotas, so the message sends the reader to the page for that).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from notifications.models import Event, Notification
from workflows.lifecycle.interruption import SPOT_REASON
from workflows.models import Task, TaskStatus, Workflow, WorkflowStatus

OUTCOMES = {
    WorkflowStatus.COMPLETED: "completed",
    WorkflowStatus.FAILED: "failed",
    WorkflowStatus.FAILED_QUEUE_TIMEOUT: "timed out in the queue",
    WorkflowStatus.FAILED_EXEC_TIMEOUT: "timed out running",
    WorkflowStatus.FAILED_SUBMISSION: "failed at submission",
    WorkflowStatus.FAILED_BACKEND_ERROR: "failed in the cluster",
    WorkflowStatus.FAILED_PREEMPTED: "was preempted",
    WorkflowStatus.CANCELLED: "was cancelled",
}
ERROR_CHARS = 500  # of the workflow's error, in a message


@dataclass(frozen=True)
class Message:
    subject: str
    text: str

    @property
    def slack(self) -> dict:
        """Slack's incoming-webhook body."""
        return {"text": f"*{self.subject}*\n{self.text}"}


def compose(notification: Notification) -> Message:
    workflow = notification.workflow
    if notification.event == Event.QUEUED:
        waited = _duration(timezone.now() - workflow.created_at)
        subject = f"Workflow {workflow.workflow_id} has waited {waited} without starting"
        lines = [f"It is still {workflow.status.lower()} in pool {workflow.pool.name}; its page says why it waits."]
    else:
        subject = f"Workflow {workflow.workflow_id} {outcome(workflow)}"
        lines = [f"Pool {workflow.pool.name}, status {workflow.status}."]
        if workflow.error:
            lines.append(workflow.error[:ERROR_CHARS])
    lines.append(link(workflow))
    return Message(subject, "\n".join(lines))


def outcome(workflow: Workflow) -> str:
    """`completed`, `was cancelled by alice`, `failed: spot interruption on node n-3`, …"""
    if workflow.status == WorkflowStatus.CANCELLED and workflow.cancelled_by:
        return f"was cancelled by {workflow.cancelled_by}"
    if workflow.status == WorkflowStatus.FAILED_PREEMPTED and workflow.preemption.get("by"):
        return f"was preempted by {workflow.preemption['by']}"
    if workflow.status != WorkflowStatus.COMPLETED:
        spot = (
            Task.objects.filter(workflow=workflow, exit_reason=SPOT_REASON)
            .exclude(status=TaskStatus.COMPLETED)
            .values_list("node", flat=True)
            .first()
        )
        if spot is not None:
            return f"failed: {SPOT_REASON} on node {spot}"
    return OUTCOMES.get(workflow.status, workflow.status.lower())


def link(workflow: Workflow) -> str:
    """The workflow's page: absolute with PORTAL_URL, else the path."""
    path = reverse("selfservice:workflow", args=[workflow.workflow_id])
    return f"{settings.PORTAL_URL.rstrip('/')}{path}"


def _duration(delta) -> str:
    minutes = max(0, int(delta.total_seconds())) // 60
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"
