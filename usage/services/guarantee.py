"""Idle guarantee (docs/usage.md, "Reports"): deserved GPU-hours a project did not use, per project and node pool.

Each hour a project's deserved GPUs in a node pool are sampled (`usage.models.DeservedSample`, written by the
quotas' hourly task). That hour the project was guaranteed `deserved × 3600` GPU-seconds there; what it did
not use of them is idle: `max(0, deserved × 3600 − used GPU-seconds)`, the used seconds being the report's
own reading of the record for that hour, project and node pool (`usage.services.report.usage`). Using more
than deserved (borrowing) leaves nothing idle and does not make up for another hour. The hour that is still
running counts up to now only, so an idle guarantee never runs ahead of the clock.

It is defined for groupings by project, department and node pool only (a sample knows nothing of pools,
platforms or instance types): `applies` says whether a report query asks for it.

Queries: the report's two for the hourly use, one for the samples; whatever the number of rows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.utils import timezone

from usage.models import DeservedSample
from usage.services.report import ReportQuery, usage
from usage.services.rollup import floor_day

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
    samples = DeservedSample.objects.filter(hour__gte=query.start, hour__lt=query.end, gpu_deserved__gt=0)
    for column, values in query.filters.items():
        samples = samples.filter(**{f"{column}__in": list(values)})
    sums: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for sample in samples.values("hour", "node_pool", "project", "department", "gpu_deserved").order_by():
        seconds = hour_seconds(sample["hour"], now)
        if not seconds:
            continue
        spent = used.get((sample["hour"], sample["project"], sample["node_pool"]), 0)
        key = (_period(query.granularity, sample["hour"]), tuple(sample[column] for column in query.by))
        sums[key][0] += sample["gpu_deserved"] * seconds
        sums[key][1] += idle_seconds(sample["gpu_deserved"], seconds, spent)
    return {key: (deserved, idle) for key, (deserved, idle) in sums.items()}


def _period(granularity: str, hour: datetime) -> datetime | None:
    if granularity == "hour":
        return hour
    if granularity == "day":
        return floor_day(hour)
    return None
