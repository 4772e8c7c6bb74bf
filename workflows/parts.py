"""Charging a workflow's tasks at submission (docs/admission.md, "Workflows across node pools"): each task is
charged to the node pool of its own platform, as the admission gate says (`workflows.admission_gate`), and the
tasks charged to one node pool make one `WorkflowPart` with their requests summed. A part the gate admits at
once (unmanaged node pool, or delegated to the cluster's scheduler) is admitted now, its tasks' pods confined
to its node pool; the workflow waits QUEUED while any part waits.

Queries: none here beyond the gate's (`charge`, cached per process; `checker`, before the transaction) and
one INSERT of the parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.utils import timezone

from pools.engine.placement_fit import pod_requests, sum_requests
from workflows import admission_gate
from workflows.admission_gate import Charge, TaskAsk
from workflows.models import Workflow, WorkflowPart, WorkflowStatus

# What a workflow asks its node pools for (docs/quotas.md): quota resource → the pods' resource name.
QUOTA_RESOURCES = {"gpu": "nvidia.com/gpu", "cpu": "cpu", "memory": "memory"}


def workflow_requests(pods) -> dict[str, int]:
    """The summed requests of pods in scheduler units: gpu devices, cpu millicores, memory bytes."""
    total = sum_requests(pod_requests(pod) for pod in pods)
    return {quota: total.get(name, 0) for quota, name in QUOTA_RESOURCES.items()}


@dataclass(frozen=True)
class Charges:
    """Platform name → where its tasks are charged (`by_platform`), and the gate's check of what can never run."""

    by_platform: dict[str, Charge]
    check: Callable[[list[TaskAsk]], None]


def charges(stub: Workflow, platform_names: list[str]) -> Charges | None:
    """Where the tasks of each platform the workflow uses are charged, and the check; None without a gate.
    Asked before the submission's transaction (the gate may answer from its cache). `stub`: the workflow
    unsaved."""
    gate = admission_gate.current()
    if gate is None:
        return None
    found = {name: gate.charge(stub, name) for name in dict.fromkeys(platform_names)}
    return Charges(found, gate.checker(stub, {c.node_pool for c in found.values()}))


@dataclass(frozen=True)
class PlannedPod:
    task: str
    platform: str
    pod: dict


def charge(workflow: Workflow, charged: Charges | None, lead_platform: str, pods: list[PlannedPod]) -> list:
    """Charge the unsaved `workflow` (lead's node pool, QUEUED or admitted now) and return its parts, unsaved;
    the gate's check first refuses what can never run. Nothing without a gate."""
    if charged is None:
        return []
    found = charged.by_platform
    asks = [TaskAsk(p.task, found[p.platform].node_pool, workflow_requests([p.pod])) for p in pods]
    charged.check(asks)
    now = timezone.now()
    queued = {found[p.platform].node_pool for p in pods if found[p.platform].queue}
    parts: dict[str, WorkflowPart] = {}
    for ask in asks:
        part = parts.setdefault(
            ask.node_pool,
            WorkflowPart(node_pool=ask.node_pool, admitted_at=None if ask.node_pool in queued else now),
        )
        part.tasks = [*part.tasks, ask.task]
        part.requests = {r: part.requests.get(r, 0) + ask.requests.get(r, 0) for r in QUOTA_RESOURCES}
    workflow.node_pool = found[lead_platform].node_pool
    if queued:
        workflow.status = WorkflowStatus.QUEUED
    else:
        workflow.admitted_at = now
    return list(parts.values())


def charge_of(found: Charges | None, platform: str) -> Charge | None:
    """Where the tasks of `platform` are charged (None without a gate)."""
    return found.by_platform.get(platform) if found is not None else None


def task_charge(found: Charges | None, platform: str) -> tuple[str, dict]:
    """(the task's node pool, the nodeSelector that confines its pod there, from submission on: admitted at once
    or when its part is admitted, the pod never lands outside its node pool)."""
    charged = charge_of(found, platform)
    if charged is None:
        return "", {}
    return charged.node_pool, dict(charged.node_selector)


def store(workflow: Workflow, parts: list[WorkflowPart]) -> None:
    """Write the parts of the just-saved workflow (one INSERT)."""
    for part in parts:
        part.workflow = workflow
    WorkflowPart.objects.bulk_create(parts)
