"""Idle guarantee (docs/usage.md, "Reports"): deserved GPU-hours a project did not use, per project and node pool.

Each hour a project's deserved GPUs in a node pool are sampled (`usage.models.DeservedSample`, written by the
quotas' hourly task). That hour the project was guaranteed `deserved × 3600` GPU-seconds there; what it did
not use of them is idle: `max(0, deserved × 3600 − used GPU-seconds)`, the used seconds being the report's
own reading of the record for that hour, project and node pool (`usage.services.report.usage`). Using more
than deserved (borrowing) leaves nothing idle and does not make up for another hour. The hour that is still
running counts up to now only, so an idle guarantee never runs ahead of the clock.

An hour with no sample at all (before sampling began, or while the portal was down) is **unknown**: it counts
neither as deserved nor as idle, and a report says so (`coverage`: from which hour the guarantee is known, and
how many hours of the period have no sample). An hour that has samples, but none for a project, is known: that
project deserved nothing there then (the sampler writes only quotas with deserved GPUs).

It is defined for groupings by project, department and node pool only (a sample knows nothing of pools,
platforms or instance types): `applies` says whether a report query asks for it.

Queries: the report's two for the hourly use, one for the samples, one for the sampled hours (`coverage`);
whatever the number of rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from usage.models import DeservedSample
from usage.services.report import ReportQuery, bucket, matching, usage

COLUMNS = frozenset({"project", "department", "node_pool"})  # what a deserved sample is about


def applies(query: ReportQuery) -> bool:
    """Whether the idle guarantee means something for this report: grouped and filtered by project,
    department or node pool only."""
    return bool(query.by) and set(query.by) <= COLUMNS and set(query.filters) <= COLUMNS


def idle_seconds(deserved_gpus: int, seconds: int, used_gpu_seconds: int) -> int:
    """The GPU-seconds of a guarantee of `deserved_gpus` over `seconds` that `used_gpu_seconds` left idle."""
    return max(0, deserved_gpus * seconds - used_gpu_seconds)


def hour_seconds(hour: datetime, now: datetime) -> int:
    """Seconds of `hour` that have passed by `now`: 3600, fewer for the running hour, 0 for a future one."""
    return max(0, min(3600, int((now - hour).total_seconds())))


def idle_guarantee(query: ReportQuery, now: datetime | None = None) -> dict[tuple, tuple[int, int]]:
    """(period, group) → (deserved GPU-seconds, idle GPU-seconds) for `query`'s period, grouping (its `by`
    columns, in order) and granularity; period None for "total", as in the report's rows."""
    now = now or timezone.now()
    hourly = ReportQuery(query.start, query.end, ("project", "node_pool"), "hour", query.filters)
    used = {(row.period, row.group["project"], row.group["node_pool"]): row.gpu_seconds for row in usage(hourly, now)}
    sums: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for sample in _samples(query):
        seconds = hour_seconds(sample["hour"], now)
        if not seconds:
            continue
        spent = used.get((sample["hour"], sample["project"], sample["node_pool"]), 0)
        key = (bucket(query.granularity, sample["hour"]), tuple(sample[column] for column in query.by))
        sums[key][0] += sample["gpu_deserved"] * seconds
        sums[key][1] += idle_seconds(sample["gpu_deserved"], seconds, spent)
    return {key: (deserved, idle) for key, (deserved, idle) in sums.items()}


def deserved_seconds(query: ReportQuery, now: datetime | None = None) -> dict[tuple, int]:
    """(period, group) → deserved GPU-seconds of the sampled hours only, as `idle_guarantee` counts them, without
    reading the usage (one query)."""
    now = now or timezone.now()
    sums: dict[tuple, int] = defaultdict(int)
    for sample in _samples(query):
        key = (bucket(query.granularity, sample["hour"]), tuple(sample[column] for column in query.by))
        sums[key] += sample["gpu_deserved"] * hour_seconds(sample["hour"], now)
    return dict(sums)


def _samples(query: ReportQuery):
    """The samples of `query`'s period and filters with deserved GPUs (the sampler writes no others)."""
    samples = DeservedSample.objects.filter(matching(query), hour__gte=query.start, hour__lt=query.end)
    fields = ("hour", "node_pool", "project", "department", "gpu_deserved")
    return samples.filter(gpu_deserved__gt=0).values(*fields).order_by()


@dataclass(frozen=True)
class Coverage:
    """The hours of a report's period that have deserved samples (the others are unknown), up to now."""

    hours: frozenset[datetime]
    elapsed: int  # hours of the period begun by now

    @property
    def known_from(self) -> datetime | None:
        """The first sampled hour of the period: the idle guarantee is known from then (None: not at all)."""
        return min(self.hours) if self.hours else None

    def sampled_seconds(self, since: datetime, now: datetime) -> int:
        """Seconds from `since` to `now` inside sampled hours (the running hour up to now)."""
        return sum(hour_seconds(hour, now) for hour in self.hours if hour >= since)

    @property
    def unknown_hours(self) -> int:
        """Hours of the period so far without a sample, not counted: before sampling began, or gaps."""
        return self.elapsed - len(self.hours)

    def periods(self, granularity: str) -> set[datetime | None]:
        """The report rows' periods (None: the whole period) that have at least one sampled hour."""
        return {bucket(granularity, hour) for hour in self.hours}


def coverage(query: ReportQuery, now: datetime | None = None) -> Coverage:
    """Which hours of `query`'s period have been sampled, whatever its filters (a project without a sample in a
    sampled hour deserved nothing then). One query."""
    now = now or timezone.now()
    end = min(query.end, now)
    hours = DeservedSample.objects.filter(hour__gte=query.start, hour__lt=end).values_list("hour", flat=True)
    elapsed = max(0, -(-int((end - query.start).total_seconds()) // 3600))  # begun hours, the running one too
    return Coverage(frozenset(hours.distinct().order_by()), elapsed)
