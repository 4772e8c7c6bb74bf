"""Usage over a period, grouped as asked (docs/usage.md, "Reports"): the one reading of the usage record that the
consumption report (REST, CLI), the admin's usage page and the researchers' "my team's usage" share.

Each attempt counts once: the rollups hold the attempts marked rolled up; closed attempts not rolled up yet and
running attempts (up to `now`) are added from the raw record, with the same per-hour arithmetic as the rollups
(usage.services.rollup.hour_contributions). The period is whole hours, [start, end), end at most `now`.

Queries: one aggregate over the rollups (whole days from the daily rows, the hours at either edge from the
hourly rows), one over the raw attempts not in them; whatever the number of groups.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.db.models import Q, Sum
from django.utils import timezone

from portal.errors import PortalError
from usage.models import DIMENSIONS, Granularity, TaskAttempt, UsageRollup
from usage.services.rollup import ATTEMPT_FIELDS, DAY, HOUR, floor_day, floor_hour, hour_contributions

GROUPS = {  # what a report may be grouped by: the CLI's/REST's name → the record's column
    "project": "project",
    "department": "department",
    "pool": "pool",
    "node-pool": "node_pool",
    "platform": "platform",
    "backend": "backend",
    "instance-type": "instance_type",
    "capacity-type": "capacity_type",
}
GRANULARITIES = ("total", "day", "hour")
MAX_PERIOD_DAYS = 731  # the rollups' default retention and a day


class ReportError(PortalError):
    status = 400
    code = "invalid_report"


@dataclass(frozen=True)
class ReportQuery:
    start: datetime
    end: datetime
    by: tuple[str, ...] = ("project",)  # columns (usage.models.DIMENSIONS)
    granularity: str = "total"
    filters: dict[str, tuple[str, ...]] = field(default_factory=dict)  # column → accepted values


@dataclass
class ReportRow:
    period: datetime | None  # None for "total"
    group: dict[str, str]
    gpu_seconds: int = 0
    cpu_milli_seconds: int = 0
    memory_mib_seconds: int = 0
    cost_micros: int = 0

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / 3600

    @property
    def cpu_hours(self) -> float:
        return self.cpu_milli_seconds / 3_600_000

    @property
    def memory_gib_hours(self) -> float:
        return self.memory_mib_seconds / (1024 * 3600)

    @property
    def cost_usd(self) -> float:
        return self.cost_micros / 1_000_000

    def as_dict(self) -> dict:
        return {
            **({"period": self.period.isoformat()} if self.period is not None else {}),
            **self.group,
            "gpu_hours": round(self.gpu_hours, 3),
            "cpu_hours": round(self.cpu_hours, 3),
            "memory_gib_hours": round(self.memory_gib_hours, 3),
            "cost_usd": round(self.cost_usd, 2),
        }


def period(start: datetime, end: datetime, now: datetime | None = None) -> tuple[datetime, datetime]:
    """[start, end) in whole hours, end at most the next whole hour after now; refused when empty or too long."""
    now = now or timezone.now()
    start = floor_hour(start)
    end = min(floor_hour(end - timedelta(microseconds=1)) + HOUR, floor_hour(now) + HOUR)
    if end <= start:
        raise ReportError("the period is empty: --to must come after --from, and --from before now", field="to")
    if end - start > timedelta(days=MAX_PERIOD_DAYS):
        raise ReportError(f"the period is {(end - start).days} days; at most {MAX_PERIOD_DAYS}", field="from")
    return start, end


def usage(query: ReportQuery, now: datetime | None = None) -> list[ReportRow]:
    """The report's rows, in order of period, then descending GPU-hours, then group. The period is taken in
    whole hours (its start and end rounded out to the hour)."""
    now = now or timezone.now()
    query = replace(query, start=floor_hour(query.start), end=floor_hour(query.end - timedelta(microseconds=1)) + HOUR)
    sums: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for period_start, key, values in rolled_up(query):
        _add(sums[(period_start, key)], values)
    for period_start, key, values in _from_raw(query, now):
        _add(sums[(period_start, key)], values)
    rows = [
        ReportRow(period_start, dict(zip(query.by, key, strict=True)), *values)
        for (period_start, key), values in sums.items()
    ]
    rows.sort(key=lambda row: (row.period or query.start, -row.gpu_seconds, tuple(row.group.values())))
    return rows


def _add(target: list[int], values) -> None:
    for index in range(4):
        target[index] += values[index]


def bucket(granularity: str, at: datetime) -> datetime | None:
    """The report row's period that the hour `at` falls in (None: the whole period, "total")."""
    if granularity == "hour":
        return at
    if granularity == "day":
        return floor_day(at)
    return None


def matching(query: ReportQuery) -> Q:
    """The rows `query`'s filters accept (their columns are the record's, the rollups' and the samples')."""
    condition = Q()
    for column, values in query.filters.items():
        condition &= Q(**{f"{column}__in": list(values)})
    return condition


def rolled_up(query: ReportQuery):
    """Whole days inside the period from the daily rows (unless hours are asked), the edges from the hourly rows."""
    first_day = floor_day(query.start) + (DAY if floor_day(query.start) < query.start else timedelta(0))
    last_day = floor_day(query.end)
    use_days = query.granularity != "hour" and first_day < last_day
    spans = (
        [
            (Granularity.DAY, first_day, last_day),
            (Granularity.HOUR, query.start, first_day),
            (Granularity.HOUR, last_day, query.end),
        ]
        if use_days
        else [(Granularity.HOUR, query.start, query.end)]
    )
    condition = Q()
    for granularity, start, end in spans:
        if start < end:
            condition |= Q(granularity=granularity, period_start__gte=start, period_start__lt=end)
    if not condition:
        return
    group = ["period_start", *query.by] if query.granularity != "total" else list(query.by)
    rows = (
        UsageRollup.objects.filter(condition)
        .filter(matching(query))
        .values(*group)
        .annotate(
            gpu=Sum("gpu_seconds"),
            cpu=Sum("cpu_milli_seconds"),
            memory=Sum("memory_mib_seconds"),
            cost=Sum("cost_micros"),
        )
        .order_by()
    )
    for row in rows:
        period_start = bucket(query.granularity, row["period_start"]) if query.granularity != "total" else None
        yield period_start, tuple(row[name] for name in query.by), (row["gpu"], row["cpu"], row["memory"], row["cost"])


def not_rolled_up(query: ReportQuery):
    """The attempts a report adds from the raw record: closed ones not rolled up yet, and running ones (never
    rolled up), that overlap the period and match the filters."""
    return (
        TaskAttempt.objects.filter(rolled_up=False, started_at__lt=query.end)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=query.start))
        .filter(matching(query))
    )


def _from_raw(query: ReportQuery, now: datetime):
    """Closed attempts not rolled up yet, and running attempts up to now, within the period."""
    attempts = not_rolled_up(query).values(*ATTEMPT_FIELDS)
    clipped_end = min(query.end, now.replace(microsecond=0))
    rows = []
    for row in attempts:
        if row["ended_at"] is None:
            row["ended_at"] = max(clipped_end, row["started_at"])
        rows.append(row)
    by_hour = hour_contributions(rows, query.start, min(query.end, floor_hour(now) + HOUR))
    for key, values in by_hour.items():
        hour, dimensions = key[0], dict(zip(DIMENSIONS, key[1:], strict=True))
        yield bucket(query.granularity, hour), tuple(dimensions[name] for name in query.by), values
