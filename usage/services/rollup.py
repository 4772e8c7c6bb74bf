"""Hourly and daily sums of the usage record (docs/usage.md, "Rollups").

An hour's rollup rows are a pure function of the closed attempts that overlap that hour: each attempt adds,
for the seconds it ran within the hour, `gpu × s` GPU-seconds, `cpu_millis × s` millicore-seconds,
`memory_bytes × s ÷ 2^20` MiB-seconds (rounded down per attempt and hour) and `hourly_cost × s ÷ 3600`
micro-dollars (rounded down likewise), grouped by `usage.models.DIMENSIONS`. A day's rows are the sums of its
24 hours' rows. So rebuilding any range from the raw records (`rebuild`) gives exactly the numbers the
incremental job (`roll_up`) built. Running attempts are not in rollups: reports add them up to now.

Two limits keep that true. An hour older than the raw retention (`raw_horizon`) may have lost attempts to
`usage.services.retention.prune`: it is never recomputed from what is left of the raw record, only added to (the
attempts not rolled up yet that ran in it: one that outlived the retention). And an attempt not rolled up yet
that runs past the range rebuilt is left out of it, for the job to count with all its hours.

The incremental job reads the closed attempts not rolled up yet (`TaskAttempt.rolled_up`), rebuilds the hours
they touch and the days of those hours, and marks every attempt it counted in the same transaction: an attempt
is in the rollups exactly when it is marked, so a report adds the closed unmarked ones from the raw record and
counts each attempt once. The same transaction adds the newly marked attempts' sums to the running totals per
(project, node pool) (`UsageTotal`, never pruned: the Prometheus counters, usage.services.meters).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from usage.models import DIMENSIONS, Granularity, TaskAttempt, UsageRollup, UsageTotal

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
MEASURES = ("gpu_seconds", "cpu_milli_seconds", "memory_mib_seconds", "cost_micros", "attempts")
# what `hour_contributions` reads of an attempt (the report and the metrics read the same)
ATTEMPT_FIELDS = ("started_at", "ended_at", "gpu", "cpu_millis", "memory_bytes", "hourly_cost_micros", *DIMENSIONS)


def floor_hour(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def floor_day(at: datetime) -> datetime:
    return floor_hour(at).replace(hour=0)


def hour_contributions(rows: Iterable[dict], start: datetime, end: datetime) -> dict[tuple, list[int]]:
    """(hour, dimensions) → [gpu_seconds, cpu_milli_seconds, memory_mib_seconds, cost_micros, attempts] of the
    closed attempts `rows` within [start, end) (whole hours)."""
    sums: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        began, ended = max(row["started_at"], start), min(row["ended_at"], end)
        hour = floor_hour(began)
        key_tail = tuple(row[name] for name in DIMENSIONS)
        while hour < ended:
            seconds = int((min(ended, hour + HOUR) - max(began, hour)).total_seconds())
            if seconds > 0:
                sums_row = sums[(hour, *key_tail)]
                sums_row[0] += row["gpu"] * seconds
                sums_row[1] += row["cpu_millis"] * seconds
                sums_row[2] += row["memory_bytes"] * seconds >> 20
                sums_row[3] += row["hourly_cost_micros"] * seconds // 3600
                sums_row[4] += 1
            hour += HOUR
    return sums


def _closed_overlapping(start: datetime, end: datetime):
    return TaskAttempt.objects.filter(ended_at__isnull=False, started_at__lt=end, ended_at__gt=start)


def raw_horizon(now: datetime | None = None) -> datetime:
    """The first whole hour whose attempts are all still in the raw record: retention removes only attempts that
    ended `USAGE_RAW_RETENTION_DAYS` before it runs. Rollups of earlier hours are kept, never recomputed."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.USAGE_RAW_RETENTION_DAYS)
    return floor_hour(cutoff - timedelta(microseconds=1)) + HOUR


def rebuild_hours(start: datetime, end: datetime, *, now: datetime | None = None) -> int:
    """Rebuild the hourly rows of [start, end) (whole hours) from the raw records, then the days they touch; the
    attempts counted are marked rolled up (a closed attempt never changes again, so what was read is what counts).

    Hours before `raw_horizon(now)` keep their rows, plus what the attempts not rolled up yet add to them (the
    raw record no longer holds all of theirs). An attempt not rolled up yet that runs past [start, end) is neither
    counted nor marked: the job rebuilds all its hours (a report adds it from the raw record until then)."""
    start, end = floor_hour(start), floor_hour(end - timedelta(microseconds=1)) + HOUR
    kept_before = min(max(raw_horizon(now), start), end)
    with transaction.atomic():
        counted = Q(rolled_up=True) | Q(started_at__gte=start, ended_at__lte=end)  # not one that runs past the range
        closed = _closed_overlapping(start, end).filter(counted).values("pk", "rolled_up", *ATTEMPT_FIELDS)
        rows = list(closed.iterator(chunk_size=5000))
        fresh = [row for row in rows if not row["rolled_up"]]
        sums = hour_contributions(rows, kept_before, end)
        if start < kept_before:
            sums.update(_added_to_kept(start, kept_before, fresh))
        UsageRollup.objects.filter(granularity=Granularity.HOUR, period_start__gte=start, period_start__lt=end).delete()
        _insert(Granularity.HOUR, sums)
        _rebuild_days(floor_day(start), floor_day(end - timedelta(microseconds=1)) + DAY)
        for index in range(0, len(fresh), 5000):
            TaskAttempt.objects.filter(pk__in=[row["pk"] for row in fresh[index : index + 5000]]).update(rolled_up=True)
        _add_to_totals(lifetime_sums(fresh))
    return len(sums)


def _added_to_kept(start: datetime, end: datetime, fresh: list[dict]) -> dict[tuple, list[int]]:
    """The hourly rows of [start, end) as they are, plus what the attempts `fresh` (not rolled up yet) add."""
    kept = UsageRollup.objects.filter(granularity=Granularity.HOUR, period_start__gte=start, period_start__lt=end)
    sums: dict[tuple, list[int]] = {
        tuple(row[: 1 + len(DIMENSIONS)]): list(row[1 + len(DIMENSIONS) :])
        for row in kept.values_list("period_start", *DIMENSIONS, *MEASURES)
    }
    for key, values in hour_contributions(fresh, start, end).items():
        total = sums.setdefault(key, [0] * len(MEASURES))
        for index, value in enumerate(values):
            total[index] += value
    return sums


def lifetime_sums(rows: list[dict]) -> dict[tuple[str, str], list[int]]:
    """(project, node pool) → [GPU-seconds, cost micro-dollars] of attempts `rows` over their whole life (each
    needs an end), with the rollups' per-hour arithmetic: what they add to every report that covers them."""
    sums: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    if not rows:
        return sums
    start = floor_hour(min(row["started_at"] for row in rows))
    end = floor_hour(max(row["ended_at"] for row in rows)) + HOUR
    project, node_pool = DIMENSIONS.index("project") + 1, DIMENSIONS.index("node_pool") + 1
    for key, values in hour_contributions(rows, start, end).items():
        total = sums[(key[project], key[node_pool])]
        total[0] += values[0]
        total[1] += values[3]
    return sums


def _add_to_totals(sums: dict[tuple[str, str], list[int]]) -> None:
    """Add to each (project, node pool)'s total, creating it if new: one statement run per group."""
    if not sums:
        return
    table, quote = UsageTotal._meta.db_table, connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(table)} (project, node_pool, gpu_seconds, cost_micros) VALUES (%s, %s, %s, %s) "
        f"ON CONFLICT (project, node_pool) DO UPDATE SET gpu_seconds = {quote(table)}.gpu_seconds + "
        f"EXCLUDED.gpu_seconds, cost_micros = {quote(table)}.cost_micros + EXCLUDED.cost_micros"
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, [(*key, *values) for key, values in sums.items()])


def _rebuild_days(start: datetime, end: datetime) -> None:
    """Each day of [start, end) as the sums of its hourly rows, in SQL (one INSERT … SELECT per day)."""
    UsageRollup.objects.filter(granularity=Granularity.DAY, period_start__gte=start, period_start__lt=end).delete()
    table, quote = UsageRollup._meta.db_table, connection.ops.quote_name
    dimensions = ", ".join(quote(name) for name in DIMENSIONS)
    sums = ", ".join(f"SUM({quote(name)})" for name in MEASURES)
    sql = (
        f"INSERT INTO {quote(table)} ({quote('granularity')}, {quote('period_start')}, {dimensions}, "
        f"{', '.join(quote(name) for name in MEASURES)}) "
        f"SELECT %s, %s, {dimensions}, {sums} FROM {quote(table)} "
        f"WHERE {quote('granularity')} = %s AND {quote('period_start')} >= %s AND {quote('period_start')} < %s "
        f"GROUP BY {dimensions}"
    )
    adapt = connection.ops.adapt_datetimefield_value
    day = start
    with connection.cursor() as cursor:
        while day < end:
            cursor.execute(sql, [Granularity.DAY, adapt(day), Granularity.HOUR, adapt(day), adapt(day + DAY)])
            day += DAY


def _insert(granularity: str, sums: dict[tuple, list[int]]) -> None:
    """Many rows in one statement run per row (psycopg pipelines it): a fraction of `bulk_create`'s cost per field."""
    if not sums:
        return
    columns = ("granularity", "period_start", *DIMENSIONS, *MEASURES)
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(UsageRollup._meta.db_table)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))})"
    )
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.executemany(sql, [(granularity, adapt(key[0]), *key[1:], *values) for key, values in sums.items()])


def roll_up(now: datetime | None = None, *, repair: bool = True) -> int:
    """The incremental job: close what a missed event left open (`repair`), rebuild the hours (and days) touched
    by closed attempts not rolled up yet, and mark every attempt those rebuilt hours counted as rolled up, in the
    same transaction. Returns the number of hours rebuilt."""
    from usage.services.record import repair_open

    if repair:
        repair_open(now or timezone.now())
    pending = TaskAttempt.objects.filter(rolled_up=False, ended_at__isnull=False)
    hours: set[datetime] = set()
    for began, ended in pending.values_list("started_at", "ended_at").iterator(chunk_size=5000):
        hour = floor_hour(began)
        hours.add(hour)
        while hour + HOUR < ended:
            hour += HOUR
            hours.add(hour)
    for start, end in _runs(sorted(hours)):
        rebuild_hours(start, end, now=now)
    return len(hours)


def _runs(hours: list[datetime]) -> Iterable[tuple[datetime, datetime]]:
    """Contiguous runs of hours as [start, end) ranges."""
    start = previous = None
    for hour in hours:
        if start is None:
            start = previous = hour
        elif hour == previous + HOUR:
            previous = hour
        else:
            yield start, previous + HOUR
            start = previous = hour
    if start is not None:
        yield start, previous + HOUR


def rebuild(start: datetime | None = None, end: datetime | None = None, *, now: datetime | None = None) -> int:
    """Recompute every rollup in [start, end) (default: everything the raw records cover) from the raw records;
    hours before `raw_horizon(now)` are kept (their pruned attempts are no longer in the raw record)."""
    closed = TaskAttempt.objects.filter(ended_at__isnull=False)
    if start is None:
        start = closed.order_by("started_at").values_list("started_at", flat=True).first()
    if end is None:
        end = closed.order_by("-ended_at").values_list("ended_at", flat=True).first()
    if start is None or end is None:
        return 0
    end = max(end, start + timedelta(seconds=1))
    return rebuild_hours(start, end, now=now)
