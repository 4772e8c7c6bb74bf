"""The usage record as Prometheus metrics (docs/operations.md, "Metrics"): GPU-seconds and cost per project and
node pool, so a Grafana user charts the numbers the usage report gives.

A counter must only go up, and the report's numbers are computed, not counted. So, at scrape time and in one
snapshot of the database:

    closed  = retired + the report's total over the whole record − the running attempts' part  (counters)
    running = the running attempts' part: their GPU-seconds and cost up to now, and their GPUs   (gauges)

`closed + running` is exactly the report's total (usage.services.report, the one reading of the record). The
closed part only grows: an attempt closes once and never changes, rolling it up moves it from the raw record to
the rollups with the same per-hour arithmetic, and the daily rollups retention removes are first added to
`retired` (SharedCount rows, in the prune's transaction: `prune_keeping_totals`). The whole record starts at the
earliest daily rollup (else the raw records' retention ago), at most report.MAX_PERIOD_DAYS back: with
USAGE_ROLLUP_RETENTION_DAYS above 730, older days leave the counters (a reset for Prometheus).

Queries per scrape: the record's start (1), the report (2), the running attempts (1), the retired totals (1).
"""

from __future__ import annotations

import json
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Sum
from django.utils import timezone

from portal.models import SharedCount
from usage.models import DIMENSIONS, Granularity, TaskAttempt, UsageRollup
from usage.services import retention
from usage.services.report import MAX_PERIOD_DAYS, ReportQuery, period, usage
from usage.services.rollup import DAY, floor_day, floor_hour, hour_contributions

BY = ("project", "node_pool")
RETIRED = {"gpu": "portal_usage_retired_gpu_seconds", "cost": "portal_usage_retired_cost_micros"}


@dataclass
class Meter:
    """One (project, node pool): closed = counters; running = gauges."""

    gpu_seconds: int = 0
    cost_micros: int = 0
    running_gpu_seconds: int = 0
    running_cost_micros: int = 0
    running_gpus: int = 0


def meters(now: datetime | None = None) -> dict[tuple[str, str], Meter]:
    """(project, node pool) → its meter, read in one snapshot (repeatable read on PostgreSQL)."""
    now = (now or timezone.now()).replace(microsecond=0)
    found: dict[tuple[str, str], Meter] = defaultdict(Meter)
    with _snapshot():
        start, end = period(_record_start(now), now, now)
        for row in usage(ReportQuery(start, end, by=BY), now=now):
            meter = found[(row.group["project"], row.group["node_pool"])]
            meter.gpu_seconds += row.gpu_seconds
            meter.cost_micros += row.cost_micros
        for key, (gpus, seconds, cost) in _running(start, end, now).items():
            meter = found[key]
            meter.running_gpus, meter.running_gpu_seconds, meter.running_cost_micros = gpus, seconds, cost
            meter.gpu_seconds -= seconds
            meter.cost_micros -= cost
        for key, (seconds, cost) in _retired().items():
            found[key].gpu_seconds += seconds
            found[key].cost_micros += cost
    return dict(sorted(found.items()))


@contextmanager
def _snapshot():
    """Every read sees the same moment: an attempt closing between two reads cannot be counted as running in one
    and closed in the other (which could lower a counter). Inside a caller's transaction: its own rules."""
    if connection.in_atomic_block or connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _record_start(now: datetime) -> datetime:
    earliest = (
        UsageRollup.objects.filter(granularity=Granularity.DAY)
        .order_by("period_start")
        .values_list("period_start", flat=True)
        .first()
    )
    start = earliest or floor_day(now) - timedelta(days=settings.USAGE_RAW_RETENTION_DAYS + 1)
    return max(start, floor_day(floor_hour(now) - timedelta(days=MAX_PERIOD_DAYS)) + DAY)


def _running(start: datetime, end: datetime, now: datetime) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(project, node pool) → (GPUs, GPU-seconds, cost micro-dollars) of the running attempts within [start, end),
    up to now, with the report's arithmetic (usage.services.rollup.hour_contributions)."""
    rows = list(
        TaskAttempt.objects.filter(ended_at__isnull=True, started_at__lt=end).values(
            "started_at", "ended_at", "gpu", "cpu_millis", "memory_bytes", "hourly_cost_micros", *DIMENSIONS
        )
    )
    gpus: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        row["ended_at"] = max(min(end, now), row["started_at"])
        gpus[(row["project"], row["node_pool"])] += row["gpu"]
    sums: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for key, values in hour_contributions(rows, start, min(end, floor_hour(now) + timedelta(hours=1))).items():
        dimensions = dict(zip(DIMENSIONS, key[1:], strict=True))
        total = sums[(dimensions["project"], dimensions["node_pool"])]
        total[0] += values[0]
        total[1] += values[3]
    return {key: (gpus[key], *sums.get(key, (0, 0))) for key in gpus}


def _retired() -> dict[tuple[str, str], tuple[int, int]]:
    found: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    rows = SharedCount.objects.filter(name__in=RETIRED.values()).values_list("name", "labels", "value")
    for name, labels, value in rows:
        values = json.loads(labels)
        found[(values.get("project", ""), values.get("node_pool", ""))][name == RETIRED["cost"]] += value
    return {key: (seconds, cost) for key, (seconds, cost) in found.items()}


def prune_keeping_totals(now: datetime | None = None) -> dict[str, int]:
    """Retention (usage.services.retention.prune), first adding the daily rollups it removes to the retired
    totals, in one transaction: the counters never go down."""
    now = now or timezone.now()
    with transaction.atomic():
        retire(now - timedelta(days=settings.USAGE_ROLLUP_RETENTION_DAYS))
        return retention.prune(now)


def retire(before: datetime) -> int:
    """Add the daily rollups before `before` to the retired totals (the caller's transaction removes them)."""
    old = (
        UsageRollup.objects.filter(granularity=Granularity.DAY, period_start__lt=before)
        .values(*BY)
        .annotate(gpu=Sum("gpu_seconds"), cost=Sum("cost_micros"))
        .order_by()
    )
    count = 0
    for row in old:
        labels = json.dumps({name: row[name] for name in BY}, sort_keys=True)
        for kind, amount in (("gpu", row["gpu"]), ("cost", row["cost"])):
            if amount:
                counter, _ = SharedCount.objects.select_for_update().get_or_create(name=RETIRED[kind], labels=labels)
                SharedCount.objects.filter(pk=counter.pk).update(value=F("value") + amount)
        count += 1
    return count
