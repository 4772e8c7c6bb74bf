"""Hourly series of the last hours, for sparklines (the admin dashboard, the fair-share page: docs/admin.md,
"Dashboards").

- GPUs in use per hour: the report's GPU-seconds of each hour (usage.services.report: rollups, raw attempts not
  rolled up, running ones up to now) divided by the hour's seconds; the current hour by the seconds gone so far.
  So a point is the hour's average of GPUs held by running pods.
- Workflows queued and running at the end of each hour (the last point: now): finished workflows from the record
  (WorkflowRecord: submitted, admitted, first start, end) and unfinished ones from the workflows themselves.

Queries: two for GPUs (the report's), two for the workflows; whatever the number of rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Sum
from django.utils import timezone

from usage.models import TaskAttempt, WorkflowRecord
from usage.services.report import ReportQuery, usage
from usage.services.rollup import HOUR, floor_hour

HOURS = 24


def hours(now: datetime, count: int = HOURS) -> list[datetime]:
    """The starts of the last `count` hours, oldest first; the last is the current hour."""
    current = floor_hour(now)
    return [current - HOUR * (count - 1 - index) for index in range(count)]


def gpus_in_use(
    now: datetime | None = None,
    by: tuple[str, ...] = (),
    filters: dict[str, tuple[str, ...]] | None = None,
    count: int = HOURS,
) -> dict[tuple[str, ...], list[float]]:
    """Group (values of `by`) → average GPUs in use in each of the last `count` hours (oldest first)."""
    now = (now or timezone.now()).replace(microsecond=0)  # as the report clips running attempts
    starts = hours(now, count)
    query = ReportQuery(starts[0], starts[-1] + HOUR, by=by, granularity="hour", filters=filters or {})
    series: dict[tuple[str, ...], list[float]] = {}
    index = {start: position for position, start in enumerate(starts)}
    for row in usage(query, now=now):
        key = tuple(row.group[name] for name in by)
        values = series.setdefault(key, [0.0] * count)
        values[index[row.period]] += row.gpu_seconds / _seconds_of(row.period, now)
    if not by:
        series.setdefault((), [0.0] * count)
    return {key: [round(value, 2) for value in values] for key, values in series.items()}


def _seconds_of(hour: datetime, now: datetime) -> float:
    return max(1.0, min(HOUR, now - hour).total_seconds())


@dataclass(frozen=True)
class WorkflowSeries:
    queued: list[int]
    running: list[int]


def workflows(now: datetime | None = None, count: int = HOURS) -> WorkflowSeries:
    """Workflows queued (submitted, not admitted yet: never admitted, or admitted later) and running (a task
    started, not finished) at the end of each of the last `count` hours; the last point is now."""
    from workflows.models import FINISHED_WORKFLOW, Workflow, WorkflowStatus

    now = now or timezone.now()
    first = hours(now, count)[0]
    moments = [first + HOUR * (index + 1) for index in range(count - 1)] + [now]
    finished = WorkflowRecord.objects.filter(finished_at__gt=first, submitted_at__lte=now)
    spans = [
        (submitted, admitted, started, ended, admitted is None)
        for submitted, admitted, started, ended in finished.values_list(
            "submitted_at", "admitted_at", "running_at", "finished_at"
        )
    ]
    # the unfinished ones named (the status index), not "every status but the finished" (a scan of the history)
    live = Workflow.objects.filter(status__in=sorted(set(WorkflowStatus.values) - set(FINISHED_WORKFLOW)))
    spans += [
        (created, admitted, _started(status, started, admitted, created), None, status == WorkflowStatus.QUEUED)
        for created, admitted, started, status in live.values_list("created_at", "admitted_at", "started_at", "status")
    ]
    queued, running = [0] * count, [0] * count
    for submitted, admitted, started, ended, waits in spans:
        for index, moment in enumerate(moments):
            if submitted > moment or (ended is not None and ended <= moment):
                continue
            if started is not None and started <= moment:
                running[index] += 1
            elif waits or (admitted is not None and admitted > moment):
                queued[index] += 1
    return WorkflowSeries(queued, running)


def _started(status: str, started: datetime | None, admitted: datetime | None, created: datetime) -> datetime | None:
    """A running workflow's start: its first task's, or (not written yet) its admission, else its submission."""
    if started is None and status == "RUNNING":
        return admitted or created
    return started


def gpus_running(by: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """Group → GPUs requested by the attempts running now (one query)."""
    running = TaskAttempt.objects.filter(ended_at__isnull=True)
    if not by:  # .values() without fields would group by every column
        return {(): running.aggregate(gpus=Sum("gpu"))["gpus"] or 0}
    rows = running.values(*by).annotate(gpus=Sum("gpu")).order_by()
    return {tuple(row[name] for name in by): row["gpus"] or 0 for row in rows}
