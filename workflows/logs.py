"""A task's container log, for the workflow page, the API and the CLI: read from the cluster's log API.

Who may read it is who may see the workflow (`queries.check_readable`: its submitter, or `workflow:Read` on
its pool); anyone else gets the 404 of a workflow that does not exist. Reading is live, never stored: the
cluster keeps a container's log while its pod exists, so a finished task's log goes when its pod is deleted.

What cannot be read is not an error here but a `notice` beside no lines, so a page can say it in the log
pane: the task has no pod yet, its container has not started, the pod is gone, the cluster did not answer.
A follower passes the `cursor` of its last answer back as `since` and receives only newer lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from clusters.kube.logs import MAX_LINES, LogLine, read_pod_log
from pools.engine import k8s_name
from portal.api import checked_int
from portal.errors import DomainError, NotFound
from workflows import queries
from workflows.models import Task, TaskStatus

DEFAULT_TAIL = 200
LOG_TIMEOUT = (3.0, 10.0)  # seconds (connect, read): a page waits at most this for the cluster

# what the notice is about: the page styles them, the API returns them as `state`
LIVE, NO_POD, NOT_STARTED, GONE, UNREACHABLE = "live", "no_pod", "not_started", "gone", "unreachable"


class TaskNotFound(NotFound):
    code = "task_not_found"


@dataclass
class TaskLog:
    workflow_id: str
    task: str
    pod: str
    container: str
    finished: bool  # the task ended: nothing more will come (a follower stops)
    lines: list[LogLine] = field(default_factory=list)
    state: str = LIVE
    notice: str = ""

    @property
    def cursor(self) -> str:
        """Pass back as `since` for the lines after these ("" when there are none)."""
        return self.lines[-1].at if self.lines else ""

    def as_dict(self) -> dict:
        return {
            "workflow_id": self.workflow_id,
            "task": self.task,
            "pod": self.pod,
            "container": self.container,
            "finished": self.finished,
            "state": self.state,
            "notice": self.notice,
            "cursor": self.cursor,
            "lines": [{"at": line.at, "text": line.text} for line in self.lines],
        }


def parse_tail(raw: object, name: str = "tail") -> int:
    """The number of last lines asked for: a whole number from 1 to MAX_LINES (DEFAULT_TAIL when absent)."""
    if raw in (None, ""):
        return DEFAULT_TAIL
    return checked_int(raw, name, 1, MAX_LINES)


STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z")


def parse_since(raw: object) -> str:
    """A follower's cursor: the RFC 3339 UTC timestamp of the last line it has ("" for none)."""
    text = str(raw or "").strip()
    if text and not STAMP.fullmatch(text):
        raise DomainError(
            "must be the cursor of an earlier answer, an RFC 3339 UTC time such as 2026-11-26T10:42:00.5Z",
            field="since",
            value=raw,
        )
    return text


def task_log(workflow_id: str, task_name: str, who, *, tail: int = DEFAULT_TAIL, since: str = "") -> TaskLog:
    """The last `tail` lines of the task's container (only those after `since` when given)."""
    workflow = queries.visible_workflow(who, workflow_id)
    task = Task.objects.filter(workflow=workflow, name=task_name).first()
    if task is None:
        names = ", ".join(queries.tasks_of(workflow).values_list("name", flat=True))
        raise TaskNotFound(
            f"workflow {workflow_id} has no task {task_name!r} (its tasks: {names})", field="task", value=task_name
        )
    log = TaskLog(workflow_id, task.name, task.pod_name, k8s_name(task.name), task.is_finished)
    if task.status == TaskStatus.PENDING or task.pod_created_at is None:
        log.state, log.notice = NO_POD, _no_pod(task)
        return log
    backend = workflow.pool.backend
    try:
        with connect(backend, timeout=LOG_TIMEOUT) as kube:
            log.lines = read_pod_log(kube, task.namespace, task.pod_name, log.container, tail_lines=tail, since=since)
    except KubeError as error:
        log.state, log.notice = _unreadable(error, task, backend.name)
    return log


def _no_pod(task: Task) -> str:
    if task.is_finished:
        return "This task ended before its pod was created: there is no log."
    return "No log yet: the task's pod has not been created."


def _unreadable(error: KubeError, task: Task, cluster: str) -> tuple[str, str]:
    if error.k8s_status == 404:
        return GONE, (
            f"Pod {task.namespace}/{task.pod_name} no longer exists in cluster {cluster}: "
            "a container's log is kept only while its pod exists."
        )
    if error.k8s_status == 400:  # the API server: the container is waiting to start (or no such container)
        return NOT_STARTED, f"No log yet: {error.reason.split(': HTTP 400 Bad Request: ')[-1]}"
    return UNREACHABLE, f"Cluster {cluster} did not answer, so the log cannot be shown now: {error.reason}"
