"""The workflow page's timeline: each task's events with the time since the step before, how long it waited,
started and ran, and who or what ended it ("cancelled by alice", "exit code 137 (OOMKilled)", "preempted by
…", "timed out after 2h"). Presentation only: it reads what the lifecycle recorded (events, exit code and
reason, the canceller, the preemption record) and decides nothing.

Times stay datetimes here; the template writes them as `<time datetime>` for the browser to show in the
reader's locale and time zone, and the running clocks as `data-elapsed-from` for the page's script to tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from workflows.lifecycle.interruption import SPOT_REASON
from workflows.models import Task, TaskEvent, TaskStatus, Workflow
from workflows.waiting import NOT_SCHEDULABLE

LABELS = {
    "SUBMITTED": "Submitted",
    "ADMITTED": "Admitted",
    "CREATED": "Pod created",
    "SCHEDULED": "Scheduled",
    "UNSCHEDULABLE": NOT_SCHEDULABLE,
    "WAITING": "Waiting",
    "RUNNING": "Running",
    "EXITED": "Exited",
    "RESCHEDULED": "Rescheduled",
    "CANCELLED": "Cancelled",
    "PREEMPTED": "Preempted",
    "QUEUE_TIMEOUT": "Queue timeout",
    "EXEC_TIMEOUT": "Timed out",
    "BACKEND_ERROR": "Cluster error",
    "POD_LOST": "Pod lost",
    "STOPPED": "Stopped",
    "SPOT_INTERRUPTION": "Spot interruption",
}
# the tone of the dot on the timeline
TONES = {"RUNNING": "ok", "EXITED": "", "SCHEDULED": "info", "CANCELLED": "warn", "STOPPED": "warn"}
# The order a task's steps happen in: events recorded before times were made distinct (workflows.lifecycle.
# transitions.happened) may share one instant; they are shown in this order, not in the order of their rows.
STEP_ORDER = {kind: rank for rank, kind in enumerate(("SUBMITTED", "RESERVED", "ADMITTED", "CREATED", "SCHEDULED"))}
BAD = {"SPOT_INTERRUPTION", "PREEMPTED", "QUEUE_TIMEOUT", "EXEC_TIMEOUT", "BACKEND_ERROR", "POD_LOST", "UNSCHEDULABLE"}


def duration(delta: timedelta | None) -> str:
    """4s, 1m 03s, 2h 05m, 3d 4h: the two largest units, as a person reads a duration."""
    if delta is None:
        return ""
    seconds = max(0, int(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


@dataclass
class Step:
    kind: str
    label: str
    at: datetime
    message: str
    after: str  # "+4s": the time since the step before ("" for the first)
    tone: str


@dataclass
class Phase:
    name: str  # "queued", "starting", "running", "total"
    text: str  # the duration so far
    since: datetime | None = None  # set while it still grows: the page's clock ticks from here


@dataclass
class Ending:
    text: str  # "cancelled by alice", "failed: exit code 137 (OOMKilled)", ...
    at: datetime | None
    detail: str = ""
    tone: str = "bad"


@dataclass
class Interrupted:
    """One spot interruption of the task: "spot interruption on node X at T; rescheduled as attempt 2"."""

    node: str
    at: datetime | None
    attempt: int
    outcome: str  # "rescheduled as attempt 2", "the task failed (…)"


@dataclass
class TaskTimeline:
    task: Task
    steps: list[Step] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    ending: Ending | None = None
    interruptions: list[Interrupted] = field(default_factory=list)

    @property
    def exit_text(self) -> str:
        return exit_text(self.task)


def exit_text(task: Task) -> str:
    """`137 (OOMKilled)`, `0`, or "" before the container ended."""
    if task.exit_code is None:
        return ""
    if task.exit_reason in ("", "Completed", "Error"):  # nothing the code does not say already
        return str(task.exit_code)
    return f"{task.exit_code} ({task.exit_reason})"


def timelines(workflow: Workflow, now: datetime | None = None) -> list[TaskTimeline]:
    """One timeline per task (tasks and their events prefetched by `selfservice.services.workflows`)."""
    now = now or timezone.now()
    return [_timeline(workflow, task, in_order(task.events.all()), now) for task in workflow.tasks.all()]


def in_order(events) -> list[TaskEvent]:
    """By time; steps of one instant in the order they happen (`STEP_ORDER`), then as recorded."""
    return sorted(events, key=lambda e: (e.at, STEP_ORDER.get(e.kind, len(STEP_ORDER)), e.id or 0))


def _timeline(workflow: Workflow, task: Task, events: list[TaskEvent], now: datetime) -> TaskTimeline:
    steps, before = [], None
    for event in events:
        gap = event.at - before if before is not None else None
        after = f"+{duration(gap)}" if gap and gap.total_seconds() >= 1 else ""  # same second: no "+0s"
        tone = "bad" if event.kind in BAD or (event.kind == "EXITED" and task.status == TaskStatus.FAILED) else ""
        steps.append(
            Step(
                event.kind,
                LABELS.get(event.kind, event.kind.title()),
                event.at,
                event.message,
                after,
                tone or TONES.get(event.kind, ""),
            )
        )
        before = event.at
    waiting = getattr(task, "waiting", None)  # laid on by selfservice.services.workflows.get_workflow
    if waiting and waiting.machine_pool:
        current = next((step for step in reversed(steps) if step.kind == "UNSCHEDULABLE"), None)
        if current is not None:
            current.label = waiting.headline  # what it waits for now; the scheduler's reason stays as the message
    return TaskTimeline(task, steps, _phases(task, events, now), ending(workflow, task, events), interrupted(task))


def interrupted(task: Task) -> list[Interrupted]:
    """The task's spot interruptions as `workflows.lifecycle.interruption` recorded them, oldest first."""
    lines = []
    for record in task.interruptions or ():
        if record.get("next_attempt"):
            outcome = f"rescheduled as attempt {record['next_attempt']}"
        elif record.get("action") == "COMPLETE":
            outcome = "counted as completed (its exit action)"
        else:
            outcome = "the task failed (no RESCHEDULE exit action, or no retries left)"
        at = parse_datetime(str(record.get("at") or ""))
        lines.append(Interrupted(str(record.get("node") or ""), at, int(record.get("attempt") or 1), outcome))
    return lines


def _phases(task: Task, events: list[TaskEvent], now: datetime) -> list[Phase]:
    """Queued (submitted or rescheduled → scheduled), starting (→ running), running (→ finished), and the
    total; a phase still going counts to now and carries its start for the page's clock."""
    attempt = [e for e in events if e.kind == "RESCHEDULED"]
    queued_from = attempt[-1].at if attempt else task.created_at
    scheduled = next((e.at for e in reversed(events) if e.kind == "SCHEDULED" and e.at >= queued_from), None)
    end = task.finished_at
    phases = []
    if queued_from:
        until = scheduled or end
        phases.append(Phase("queued", duration((until or now) - queued_from), None if until else queued_from))
    if scheduled and task.started_at:
        phases.append(Phase("starting", duration(task.started_at - scheduled)))
    if task.started_at:
        phases.append(Phase("running", duration((end or now) - task.started_at), None if end else task.started_at))
    if task.created_at:
        phases.append(Phase("total", duration((end or now) - task.created_at), None if end else task.created_at))
    return phases


def ending(workflow: Workflow, task: Task, events: list[TaskEvent]) -> Ending | None:
    """Who or what ended the task, when it has ended."""
    if not task.is_finished:
        return None
    last = next((e for e in reversed(events) if e.kind not in ("SUBMITTED", "ADMITTED")), None)
    at = task.finished_at or (last.at if last else None)
    status = task.status
    if status == TaskStatus.COMPLETED:
        return Ending(f"completed: exit code {exit_text(task) or 0}", at, tone="ok")
    if last is not None and last.kind == "STOPPED":
        return Ending("stopped by the workflow", at, last.message, tone="warn")
    if status == TaskStatus.CANCELLED:
        by = workflow.cancelled_by or _after(task.error, "cancelled by ") or "someone"
        message = task.error.partition(": ")[2] if ": " in task.error else ""
        return Ending(f"cancelled by {by}", at, message, tone="warn")
    if status == TaskStatus.FAILED_PREEMPTED:
        by = workflow.preemption.get("by") or ""
        return Ending(f"preempted{f' by {by}' if by else ''}", at, task.error)
    if status == TaskStatus.FAILED_EXEC_TIMEOUT:
        limit = timedelta(seconds=workflow.exec_timeout_seconds) if workflow.exec_timeout_seconds else None
        return Ending(f"timed out after {duration(limit)} running" if limit else "timed out", at, task.error)
    if status == TaskStatus.FAILED_QUEUE_TIMEOUT:
        limit = timedelta(seconds=workflow.queue_timeout_seconds) if workflow.queue_timeout_seconds else None
        return Ending(
            f"timed out after {duration(limit)} in the queue" if limit else "timed out in the queue", at, task.error
        )
    if task.exit_reason == SPOT_REASON:
        return Ending(f"{SPOT_REASON} on node {task.node}", at, task.error)
    if status == TaskStatus.FAILED_BACKEND_ERROR:
        return Ending("failed in the cluster", at, task.error)
    if task.exit_code is not None:
        return Ending(f"failed: exit code {exit_text(task)}", at, task.exit_message or task.error)
    return Ending("failed", at, task.error)


def _after(text: str, prefix: str) -> str:
    """`alice` from `cancelled by alice: message` (what rows cancelled before `cancelled_by` existed say)."""
    return text[len(prefix) :].partition(":")[0] if text.startswith(prefix) else ""
