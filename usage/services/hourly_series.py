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
from usage.services.report import ReportQuery, not_rolled_up, rolled_up
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
    seconds = gpu_seconds(query, now, count)
    series = {
        key: [value / _seconds_of(start, now) for value, start in zip(values, starts, strict=True)]
        for key, values in seconds.items()
    }
    if not by:
        series.setdefault((), [0.0] * count)
    return {key: [round(value, 2) for value in values] for key, values in series.items()}


def gpu_seconds(query: ReportQuery, now: datetime, count: int) -> dict[tuple[str, ...], list[int]]:
    """The report's GPU-seconds of each of the `count` hours of `query` (usage.services.report.usage's, with its
    per-hour rounding), by group, without its other measures: the rollups' hours, plus the attempts not rolled up
    read as three columns and spread over the hours in constant time each (a fleet's thousands of running attempts,
    each over up to 24 hours, are the dashboard's whole cost otherwise)."""
    start = query.start
    found: dict[tuple[str, ...], list[int]] = {}
    for period, key, values in rolled_up(query):
        found.setdefault(key, [0] * count)[(period - start) // HOUR] += values[0]
    end = min(query.end, now)
    full_hours: dict[tuple[str, ...], list[int]] = {}  # per group: GPUs holding whole hours, as differences
    for started, ended, gpu, *key in not_rolled_up(query).values_list("started_at", "ended_at", "gpu", *query.by):
        began, until = max(started, start), min(ended or max(end, started), query.end)
        if until <= began:
            continue
        first, last = (began - start) // HOUR, (until - start) // HOUR  # the hours `began` and `until` fall in
        if first == last:
            parts = [(first, int((until - began).total_seconds()))]
        else:  # the first hour from `began`, the last to `until` (past the period: none), whole hours between
            parts = [(first, int((start + HOUR * (first + 1) - began).total_seconds()))]
            parts += [(last, int((until - (start + HOUR * last)).total_seconds()))] if last < count else []
        whole = last > first + 1
        if not whole and not any(seconds for _, seconds in parts):
            continue  # under a second in all: the report has no row for it either
        sums = found.setdefault(tuple(key), [0] * count)
        for index, seconds in parts:  # never negative: `began` and `until` lie inside their hours
            sums[index] += gpu * seconds
        if whole:
            steps = full_hours.setdefault(tuple(key), [0] * (count + 1))
            steps[first + 1] += gpu
            steps[last] -= gpu
    for key, steps in full_hours.items():
        holding = 0
        for index in range(count):
            holding += steps[index]
            found[key][index] += holding * 3600
    return found


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
