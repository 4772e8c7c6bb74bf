"""Past usage of one node pool per project, for the time-based fair share (quotas.services.usage_weights).

Read from the raw attempts, not the rollups: running attempts count up to `until` (rollups hold closed ones
only) and the decay weighs each second by its own age, which hourly sums would round. One aggregate query
(one row per project), summed by the database: a second used `age` seconds before `until` weighs
0.5^(age / half-life), so an attempt's part is the integral `H/ln 2 · (0.5^(a_end/H) − 0.5^(a_start/H))` of its
gpu, cpu and memory over its seconds in the window (`weighted_seconds`). PostgreSQL and SQLite alike (`Epoch`).
"""

from __future__ import annotations

import math
from datetime import datetime

from django.db.models import F, FloatField, Func, Q, Sum, Value
from django.db.models.functions import Coalesce, Greatest, Least, Power

from usage.models import TaskAttempt

RESOURCE_FIELDS = (("gpu", "gpu"), ("cpu", "cpu_millis"), ("memory", "memory_bytes"))


class Epoch(Func):
    """A timestamp as seconds since 1970 (a float), on PostgreSQL and SQLite."""

    output_field = FloatField()
    template = "CAST(EXTRACT(EPOCH FROM %(expressions)s) AS double precision)"

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s) - 2440587.5) * 86400.0)")


def weighted_seconds(start: float, end: float, half_life: float | None) -> float:
    """The seconds of [start, end] (their ages, in seconds before now: start ≥ end ≥ 0), each weighted by
    0.5^(age / half_life); unweighted when `half_life` is None."""
    if half_life is None:
        return start - end
    return half_life / math.log(2) * (0.5 ** (end / half_life) - 0.5 ** (start / half_life))


def _weighted_seconds_sql(since: datetime, until: datetime, half_life: float | None):
    """`weighted_seconds` of each attempt's part of [since, until], as an SQL expression."""
    now, first = Value(until.timestamp()), Value(since.timestamp())
    end = Least(Coalesce(Epoch("ended_at"), now), now)
    start = Greatest(Epoch("started_at"), first)
    age_end, age_start = now - end, now - start
    if half_life is None:
        return age_start - age_end
    half = Value(float(half_life))
    return Value(half_life / math.log(2)) * (Power(Value(0.5), age_end / half) - Power(Value(0.5), age_start / half))


def usage_by_project(
    node_pool: str, since: datetime, until: datetime, half_life_seconds: float | None = None
) -> dict[str, dict[str, float]]:
    """project → {"gpu": device-seconds, "cpu": millicore-seconds, "memory": byte-seconds} of the attempts in
    `node_pool` within [since, until] (running ones up to `until`), each second weighted by its age when
    `half_life_seconds` is set. Attempts charged to no project are under ""."""
    seconds = _weighted_seconds_sql(since, until, half_life_seconds)
    sums = {
        resource: Sum(F(column) * seconds, output_field=FloatField(), default=0.0)
        for resource, column in RESOURCE_FIELDS
    }
    rows = (
        TaskAttempt.objects.filter(node_pool=node_pool, started_at__lt=until)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=since))
        .exclude(ended_at__lte=F("started_at"))
        .order_by()
        .values("project")
        .annotate(**sums)
    )
    return {row["project"]: {resource: max(0.0, row[resource]) for resource, _ in RESOURCE_FIELDS} for row in rows}
