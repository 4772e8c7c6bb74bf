"""What OSMO's client reads from the workflow paths (NVIDIA/OSMO src/cli/workflow.py, the service's answers in
src/service/core/workflow/objects.py): its status names, its time format, its groups/tasks shape.

- Times are naive UTC ISO 8601 (`2025-05-01T12:34:56.123456`): the CLI parses them with strptime after
  replacing `T` by a space (src/lib/utils/common.py convert_utc_datetime_to_user_zone), which refuses `Z`
  and `+00:00`.
- Status names: the portal's CANCELLED is OSMO's FAILED_CANCELED. QUEUED (waiting for quota admission) is
  the portal's own word on its API, pages and CLI; only OSMO's client (a request with OSMO's
  `x-osmo-client-version` header, src/lib/utils/version.py VERSION_HEADER, which it sends on every call) gets
  OSMO's PENDING for it, and its `--status PENDING` finds QUEUED work too (`speaks_osmo`). A task's PENDING
  (no pod yet) is OSMO's PROCESSING; WAITING (a pod that does not run yet) is SCHEDULING until a node is bound,
  then INITIALIZING.
"""

from __future__ import annotations

import functools
from datetime import datetime
from urllib.parse import quote

from django.urls import get_script_prefix, reverse
from django.utils import timezone
from django.utils.http import RFC3986_SUBDELIMS

from portal.api import osmo_time
from workflows.models import FINISHED_TASK, TaskStatus, WorkflowStatus

# Every status OSMO's `osmo workflow list --status` offers (src/cli/workflow.py, src/utils/job/workflow.py).
OSMO_WORKFLOW_STATUSES = (
    "PENDING",
    "RUNNING",
    "WAITING",
    "COMPLETED",
    "FAILED",
    "FAILED_SUBMISSION",
    "FAILED_SERVER_ERROR",
    "FAILED_EXEC_TIMEOUT",
    "FAILED_QUEUE_TIMEOUT",
    "FAILED_CANCELED",
    "FAILED_BACKEND_ERROR",
    "FAILED_IMAGE_PULL",
    "FAILED_EVICTED",
    "FAILED_START_ERROR",
    "FAILED_START_TIMEOUT",
    "FAILED_PREEMPTED",
)
# QUEUED (waiting for quota admission) has no OSMO name: OSMO's client sees it as PENDING, its word for a
# workflow whose pods are not created yet; FAILED_PREEMPTED is OSMO's own. Everyone gets FAILED_CANCELED.
_WORKFLOW_TO_OSMO = {WorkflowStatus.CANCELLED: "FAILED_CANCELED", WorkflowStatus.QUEUED: "PENDING"}
_WORKFLOW_TO_PORTAL = {WorkflowStatus.CANCELLED: "FAILED_CANCELED"}
OSMO_CLIENT_HEADER = "x-osmo-client-version"


def _reverse(mapping: dict) -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for portal, shown in mapping.items():
        names.setdefault(shown, [shown] if shown in WorkflowStatus.values else []).append(portal)
    return names


_OSMO_TO_WORKFLOW, _PORTAL_TO_WORKFLOW = _reverse(_WORKFLOW_TO_OSMO), _reverse(_WORKFLOW_TO_PORTAL)
_TASK_TO_OSMO = {TaskStatus.PENDING: "PROCESSING", TaskStatus.CANCELLED: "FAILED_CANCELED"}


def speaks_osmo(request) -> bool:
    """Whether the caller is OSMO's own client, which sends its version header on every request."""
    return request is not None and bool(request.headers.get(OSMO_CLIENT_HEADER))


def workflow_status(status: str, *, for_osmo: bool = True) -> str:
    """The status as the caller's client knows it: OSMO's client gets PENDING for QUEUED, the portal QUEUED."""
    return (_WORKFLOW_TO_OSMO if for_osmo else _WORKFLOW_TO_PORTAL).get(status, status)


def stored_statuses(names: list[str], *, for_osmo: bool = True) -> list[str]:
    """The stored statuses a list filter asks for: OSMO's names or the portal's (to OSMO's client, PENDING is
    PENDING and QUEUED; an OSMO status the portal never gives, such as FAILED_IMAGE_PULL, matches nothing)."""
    shown_to_stored = _OSMO_TO_WORKFLOW if for_osmo else _PORTAL_TO_WORKFLOW
    found: list[str] = []
    for name in names:
        for status in shown_to_stored.get(name.upper(), [name.upper()]):
            if status not in found:
                found.append(status)
    return found


def task_status(task) -> str:
    if task.status == TaskStatus.WAITING:
        return "INITIALIZING" if task.node else "SCHEDULING"
    return _TASK_TO_OSMO.get(task.status, task.status)


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """A duration in seconds (OSMO answers timedeltas); an unfinished one runs until now."""
    if start is None:
        return None
    return round(((end or timezone.now()) - start).total_seconds(), 3)


def overview_url(request, workflow_id: str) -> str:
    """The workflow's page, as OSMO's `overview` links to its UI page (`<service>/workflows/<id>`)."""
    path = _workflow_path("selfservice:workflow", workflow_id)
    return request.build_absolute_uri(path) if request is not None else path


def api_url(request, workflow_id: str, suffix: str) -> str:
    path = _workflow_path(f"workflow-{suffix}", workflow_id)
    return request.build_absolute_uri(path) if request is not None else path


def task_logs_url(request, workflow_id: str, task_name: str) -> str:
    path = reverse("task-logs", args=[workflow_id, task_name])
    return request.build_absolute_uri(path) if request is not None else path


_PLACEHOLDER = "workflow-id-placeholder"
URL_SAFE = RFC3986_SUBDELIMS + "/~:@"  # what reverse() leaves unquoted in a path


def _workflow_path(name: str, workflow_id: str) -> str:
    """`reverse(name, args=[workflow_id])`, from a pattern reversed once per URL name and script prefix (every
    submission answers with links; reversing costs more than the rest of building the answer)."""
    return _reversed(name, get_script_prefix()).replace(_PLACEHOLDER, quote(workflow_id, safe=URL_SAFE))


@functools.lru_cache(maxsize=64)
def _reversed(name: str, script_prefix: str) -> str:
    return reverse(name, args=[_PLACEHOLDER])


def groups(tasks: list) -> list[dict]:
    """OSMO's `groups`, in the order of their first task, each with its tasks (the CLI's `osmo workflow query`
    reads groups[].tasks[] name, retry_id, start_time, status)."""
    by_name: dict[str, list] = {}
    for task in tasks:
        by_name.setdefault(task.group_name, []).append(task)
    return [_group(name, members) for name, members in by_name.items()]


def _group(name: str, tasks: list) -> dict:
    started = [t.started_at for t in tasks if t.started_at]
    finished = all(t.status in FINISHED_TASK for t in tasks)
    failed = next(
        (t for t in tasks if t.status in FINISHED_TASK and t.status != TaskStatus.COMPLETED and t.error), None
    )
    return {
        "name": name,
        "status": _group_status(tasks),
        "start_time": osmo_time(min(started)) if started else None,
        "end_time": osmo_time(max(t.finished_at for t in tasks if t.finished_at)) if finished else None,
        "processing_start_time": osmo_time(min(t.created_at for t in tasks)),
        "scheduling_start_time": osmo_time(min((t.pod_created_at for t in tasks if t.pod_created_at), default=None)),
        "remaining_upstream_groups": [],
        "downstream_groups": [],
        "failure_message": failed.error if failed else None,
        "tasks": [_task(task) for task in tasks],
    }


def _group_status(tasks: list) -> str:
    """What decides the group: its lead when only the lead counts (`ignoreNonleadStatus`), else every task."""
    lead = next((t for t in tasks if t.lead), tasks[0])
    counted = [lead] if lead.ignore_non_lead_status else tasks
    if all(t.status in FINISHED_TASK for t in counted):
        failing = next((t for t in counted if t.status != TaskStatus.COMPLETED), None)
        return task_status(failing or lead)
    if any(t.status == TaskStatus.RUNNING for t in tasks):
        return "RUNNING"
    return task_status(next(t for t in counted if t.status not in FINISHED_TASK))


def _task(task) -> dict:
    return {
        "name": task.name,
        "retry_id": task.retry_id,
        "status": task_status(task),
        "failure_message": task.error or None,
        "exit_code": task.exit_code,
        "lead": task.lead,
        "pod_name": task.pod_name,
        "node_name": task.node or None,
        "processing_start_time": osmo_time(task.created_at),
        "scheduling_start_time": osmo_time(task.pod_created_at),
        "start_time": osmo_time(task.started_at),
        "end_time": osmo_time(task.finished_at),
        "dashboard_url": None,
    }
