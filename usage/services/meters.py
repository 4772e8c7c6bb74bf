"""The usage record as Prometheus metrics (docs/operations.md, "Metrics"): GPU-seconds and cost per project and
node pool, so a Grafana user charts the numbers the usage report gives.

A counter must only go up, across restarts and retention, and a scrape must not read the whole record. So,
in one snapshot of the database:

    closed  = the totals of every attempt rolled up so far (`UsageTotal`, kept by the rollup job, never pruned)
              + the closed attempts not rolled up yet, over their whole life                       (counters)
    running = the running attempts: their GPU-seconds and cost up to now, and their GPUs           (gauges)

Both raw parts are the attempts not rolled up yet (a partial index holds just those: the running ones and
those closed since the rollup job last ran). An attempt closes once and never changes; the rollup job marks
it rolled up and adds it to the totals in one transaction, with the rollups' per-hour arithmetic
(usage.services.rollup.lifetime_sums), so it moves from one part to the other with the same numbers; retention
removes only rolled-up attempts and never the totals. While retention has removed nothing, `closed + running`
is the usage report's total over the whole record.

Queries per scrape: the totals (1), the attempts not rolled up (1); whatever the size of the record.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from usage.models import TaskAttempt, UsageTotal
from usage.services.rollup import ATTEMPT_FIELDS, lifetime_sums

BY = ("project", "node_pool")


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
        for project, node_pool, seconds, cost in UsageTotal.objects.values_list(*BY, "gpu_seconds", "cost_micros"):
            found[(project, node_pool)].gpu_seconds += seconds
            found[(project, node_pool)].cost_micros += cost
        pending = list(TaskAttempt.objects.filter(rolled_up=False).values(*ATTEMPT_FIELDS).order_by())
    closed = [row for row in pending if row["ended_at"] is not None]
    running = [row for row in pending if row["ended_at"] is None]
    for key, (seconds, cost) in lifetime_sums(closed).items():
        found[key].gpu_seconds += seconds
        found[key].cost_micros += cost
    for row in running:
        row["ended_at"] = max(now, row["started_at"])  # up to now, as the report counts a running attempt
        found[(row["project"], row["node_pool"])].running_gpus += row["gpu"]
    for key, (seconds, cost) in lifetime_sums(running).items():
        found[key].running_gpu_seconds, found[key].running_cost_micros = seconds, cost
    return dict(sorted(found.items()))


@contextmanager
def _snapshot():
    """Both reads see the same moment: an attempt rolled up between them cannot be counted twice or not at all
    (which could move a counter down). Inside a caller's transaction: its own rules."""
    if connection.in_atomic_block or connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield
