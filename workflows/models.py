"""Workflows and their tasks: what was asked, what was resolved, and what the cluster did with it.

A workflow id is `<name>-<n>` with a per-name counter (`WorkflowName`), as in OSMO. Each task keeps the
exact Pod the engine resolved, so what runs is what the preview showed; pod status flows back into the
task, and the workflow status is derived from its tasks by `workflows.services`.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from access import actions
from portal.resources import PolicyResources, Scope


class WorkflowStatus(models.TextChoices):
    QUEUED = "QUEUED"  # stored; waiting for admission to its node pool's quota (docs/quotas.md)
    PENDING = "PENDING"  # stored; pods not created yet
    WAITING = "WAITING"  # pods created, not all running
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    FAILED_QUEUE_TIMEOUT = "FAILED_QUEUE_TIMEOUT"
    FAILED_EXEC_TIMEOUT = "FAILED_EXEC_TIMEOUT"
    FAILED_SUBMISSION = "FAILED_SUBMISSION"
    FAILED_BACKEND_ERROR = "FAILED_BACKEND_ERROR"
    FAILED_PREEMPTED = "FAILED_PREEMPTED"  # its pods were stopped to give the capacity back (reclaim)
    CANCELLED = "CANCELLED"


class TaskStatus(models.TextChoices):
    PENDING = "PENDING"  # pod not created yet
    WAITING = "WAITING"  # pod created, not running (queued, pulling, unschedulable)
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    FAILED_QUEUE_TIMEOUT = "FAILED_QUEUE_TIMEOUT"
    FAILED_EXEC_TIMEOUT = "FAILED_EXEC_TIMEOUT"
    FAILED_BACKEND_ERROR = "FAILED_BACKEND_ERROR"
    FAILED_PREEMPTED = "FAILED_PREEMPTED"
    CANCELLED = "CANCELLED"


FINISHED_WORKFLOW = {
    WorkflowStatus.COMPLETED,
    WorkflowStatus.FAILED,
    WorkflowStatus.FAILED_QUEUE_TIMEOUT,
    WorkflowStatus.FAILED_EXEC_TIMEOUT,
    WorkflowStatus.FAILED_SUBMISSION,
    WorkflowStatus.FAILED_BACKEND_ERROR,
    WorkflowStatus.FAILED_PREEMPTED,
    WorkflowStatus.CANCELLED,
}
FINISHED_TASK = {
    TaskStatus.COMPLETED,
    TaskStatus.FAILED,
    TaskStatus.FAILED_QUEUE_TIMEOUT,
    TaskStatus.FAILED_EXEC_TIMEOUT,
    TaskStatus.FAILED_BACKEND_ERROR,
    TaskStatus.FAILED_PREEMPTED,
    TaskStatus.CANCELLED,
}


class Priority(models.TextChoices):
    HIGH = "HIGH"
    NORMAL = "NORMAL"
    LOW = "LOW"


class WorkflowName(models.Model):
    """Per-name counter behind workflow ids (`train-1`, `train-2`, …); row-locked while numbering."""

    name = models.CharField(max_length=64, unique=True)
    last_number = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.name} ({self.last_number})"


class Workflow(models.Model):
    workflow_id = models.CharField(max_length=80, unique=True)
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=64)
    # no index of their own: (pool, status) and (submitted_by, -created_at) lead with them (each index is a write
    # more per submission: docs/scale.md, "Submission with a year of history")
    pool = models.ForeignKey("pools.Pool", on_delete=models.PROTECT, related_name="workflows", db_index=False)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="workflows", db_index=False
    )
    # The project it is charged to (teams.services.charged_project); none when its submitter belonged to none.
    project = models.ForeignKey(
        "teams.Project", on_delete=models.PROTECT, null=True, blank=True, related_name="workflows"
    )
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    status = models.CharField(
        max_length=24, choices=WorkflowStatus.choices, default=WorkflowStatus.PENDING, db_index=True
    )
    spec = models.JSONField(default=dict)  # the submitted spec, as parsed from the user's document
    labels = models.JSONField(default=dict, blank=True)
    exec_timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    queue_timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    # the Secrets its pods use (workflows.credentials): [{name, kind, registries | credentials}], names only
    credential_secrets = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)  # indexed by workflow_newest_first (created_at, id)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # --- quotas (docs/quotas.md): written by the quotas app through workflows' hooks; workflows knows no quota.
    # The node pool of its lead task, by name (workflows cannot refer up to quotas); "" before charging. Each
    # task is charged to its own node pool (`Task.node_pool`, summed per node pool in `WorkflowPart`).
    node_pool = models.CharField(max_length=128, blank=True, default="", db_index=True)
    # What it asks for, summed over all its tasks' resolved pods: {"gpu": devices, "cpu": millicores, "memory": bytes}.
    requests = models.JSONField(default=dict, blank=True)
    admitted_at = models.DateTimeField(null=True, blank=True)  # when admission let it create pods
    preemptible = models.BooleanField(default=False)  # admitted above its project's deserved quota
    # Why it waits, as admission wrote it: {"code", "text", "resource", numbers..., "position"}; {} when not queued.
    queue_reason = models.JSONField(default=dict, blank=True)
    # Why it was preempted and for whom: {"reason", "by", ...}; {} when never preempted.
    preemption = models.JSONField(default=dict, blank=True)
    # Who cancelled it (a user's name, or "the command line"); "" when it was not cancelled.
    cancelled_by = models.CharField(max_length=150, blank=True, default="")
    # The API submission's key, `<user id>:<request id>` (workflows.services.submit): the same request sent
    # again (a client's retry, or portal.dbretry's after a lost connection) answers this workflow; null: none.
    submit_key = models.CharField(max_length=160, null=True, blank=True, unique=True)

    # `pool/<its pool>` to the policy; its submitter lists, reads and cancels it whatever their roles
    policy_resources = PolicyResources(
        Scope("pool", field="pool__name"),
        owner="submitted_by",
        owner_actions=(actions.WORKFLOW_LIST, actions.WORKFLOW_READ, actions.WORKFLOW_CANCEL),
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["submitted_by", "-created_at"]),
            models.Index(fields=["pool", "status"]),
            # the lists' order, with the id that breaks ties: a deep page's ids from the index alone (docs/scale.md)
            models.Index(fields=["-created_at", "-id"], name="workflow_newest_first"),
            # the dashboard's last 24 hours: finished, admitted (docs/scale.md)
            models.Index(fields=["finished_at"], name="workflow_finished_at"),
            models.Index(fields=["admitted_at"], name="workflow_admitted_at"),
        ]

    def __str__(self) -> str:
        return self.workflow_id

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_WORKFLOW


class Task(models.Model):
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="tasks", db_index=False)
    name = models.CharField(max_length=63)
    group_name = models.CharField(max_length=80)
    lead = models.BooleanField(default=False)
    # The group's `ignoreNonleadStatus` (OSMO, default true): only the lead's outcome decides the group, and
    # the lead finishing stops the rest of the group; false: every task of the group counts.
    ignore_non_lead_status = models.BooleanField(default=True)
    platform = models.CharField(max_length=128)
    node_pool = models.CharField(max_length=128, blank=True, default="")  # its platform's, by name ("" uncharged)
    pod = models.JSONField(default=dict)  # the resolved Pod manifest, exactly as it will be created
    pod_name = models.CharField(max_length=253)
    namespace = models.CharField(max_length=63)
    exit_actions = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=24, choices=TaskStatus.choices, default=TaskStatus.PENDING)  # Meta.indexes
    retry_id = models.PositiveIntegerField(default=0)
    node = models.CharField(max_length=253, blank=True, default="")
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    exit_code = models.IntegerField(null=True, blank=True)
    # The container's terminated reason and message as the cluster reported them (OOMKilled, Error, Completed…)
    exit_reason = models.CharField(max_length=64, blank=True, default="")
    exit_message = models.TextField(blank=True, default="")
    # Spot interruptions of its attempts, oldest first, kept across retries (workflows.lifecycle.interruption):
    # [{"node", "at", "attempt", "pod", "action", "next_attempt"}]
    interruptions = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    pod_created_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["workflow_id", "id"]
        # the unique constraint's index leads with the workflow: the foreign key needs no index of its own
        constraints = [models.UniqueConstraint(fields=["workflow", "name"], name="unique_task_name_per_workflow")]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["pod_name"])]

    def __str__(self) -> str:
        return f"{self.workflow_id}/{self.name}"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_TASK


class WorkflowPart(models.Model):
    """The tasks of a workflow charged to one node pool, summed: what that node pool's admission decides about
    (docs/admission.md, "Workflows across node pools"). A workflow has one part per node pool its tasks use and
    is admitted when all its parts are (gang-style): a part admitted before the others holds its room
    (`admitted_at` set while the workflow is still QUEUED: a reservation, counted as allocated)."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="parts", db_index=False)
    node_pool = models.CharField(max_length=128)  # by name, as Workflow.node_pool
    tasks = models.JSONField(default=list)  # the names of its tasks, for reasons ("task X in node pool Y")
    requests = models.JSONField(default=dict)  # summed over its tasks' pods, as Workflow.requests
    admitted_at = models.DateTimeField(null=True, blank=True)  # this part's admission (or reservation)
    preemptible = models.BooleanField(default=False)

    class Meta:
        ordering = ["workflow_id", "node_pool"]
        # the unique constraint's index leads with the workflow: the foreign key needs no index of its own
        constraints = [models.UniqueConstraint(fields=["workflow", "node_pool"], name="unique_part_per_node_pool")]
        indexes = [models.Index(fields=["node_pool", "workflow"])]

    def __str__(self) -> str:
        return f"{self.workflow_id} in {self.node_pool}"


class TaskEvent(models.Model):
    """What happened to a task, for the user: created, scheduled, started, exited, timeouts, retries.

    `at` is when it happened: for what the cluster reports, the cluster's own time (the pod's creation, its
    PodScheduled transition, the container's startedAt and finishedAt), however late the portal learns it;
    for the portal's own acts (submit, cancel, timeouts) the portal's time. `recorded_at` is when the
    portal wrote the row."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now, db_index=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=32)
    message = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.task} {self.kind}"
