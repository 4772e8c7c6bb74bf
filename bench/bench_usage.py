"""The usage record at a month of a 1,000-GPU fleet (issue #32, docs/usage.md): about 200,000 task attempts
over 30 days, 50 projects in 10 departments, 4 node pools, some running now.

Rows: the rollup of one day (target ≤ 2 s), the 30-day consumption report by project (≤ 200 ms) and by node
pool and day, the usage part of a /metrics scrape (usage.services.meters: the totals and the attempts not rolled
up), and the full rebuild of the month (a note, no target)."""

from __future__ import annotations

import random
import sys
import time
from datetime import timedelta

from bench.django_env import throwaway_database
from bench.harness import Row, measure

DAYS = 30
ATTEMPTS_PER_DAY = 6_700
NODE_POOLS = {"h100": (40, 8, "p5.48xlarge"), "a100": (40, 8, "p4de.24xlarge"), "l40s": (50, 4, "g6e.12xlarge"),
              "t4-spot": (200, 1, "g4dn.xlarge")}  # fmt: skip  # name: (nodes, GPUs each, type): 1,000 GPUs
DEPARTMENTS = [f"dept-{d:02d}" for d in range(10)]
PROJECTS = [(f"proj-{d:02d}-{p}", f"dept-{d:02d}") for d in range(10) for p in range(5)]


def generate(now, seed: int = 32) -> int:
    """Bulk-insert a month of attempts ending at `now` (and a few hundred running); returns the row count."""
    from usage.models import TaskAttempt

    rng = random.Random(seed)
    start = now - timedelta(days=DAYS)
    pools = list(NODE_POOLS.items())
    rows, total = [], 0
    for index in range(DAYS * ATTEMPTS_PER_DAY + 300):
        name, (nodes, gpus_each, instance) = rng.choice(pools)
        project, department = rng.choice(PROJECTS)
        gpus = rng.choice([g for g in (1, 2, 4, 8) if g <= gpus_each])
        began = start + timedelta(seconds=rng.randrange(DAYS * 86400))
        seconds = int(min(86400, rng.lognormvariate(8.2, 1.0)))  # median ≈ 1 h
        ended = began + timedelta(seconds=seconds)
        running = index >= DAYS * ATTEMPTS_PER_DAY or ended > now
        rows.append(
            TaskAttempt(
                task_pk=index + 1,
                attempt=0,
                workflow_id=f"wf-{index}",
                task="t0",
                project=project,
                department=department,
                pool=f"pool-{name}",
                platform=name,
                node_pool=name,
                backend=f"cluster-{name}",  # a node pool belongs to one backend
                node=f"{name}-node-{rng.randrange(nodes)}",
                instance_type=instance,
                capacity_type="spot" if name == "t4-spot" else "on-demand",
                gpu=gpus,
                cpu_millis=gpus * 8000,
                memory_bytes=gpus * (64 << 30),
                started_at=(now - timedelta(seconds=rng.randrange(3600 * 12))) if running else began,
                ended_at=None if running else ended,
                outcome="running" if running else "completed",
                hourly_cost_micros=gpus * 4_100_000,
            )
        )
        if len(rows) == 10_000:
            TaskAttempt.objects.bulk_create(rows)
            total, rows = total + len(rows), []
    TaskAttempt.objects.bulk_create(rows)
    return total + len(rows)


def run() -> list[Row]:
    with throwaway_database():
        from django.db import connection
        from django.utils import timezone

        from usage.services import meters, report, rollup
        from usage.services.rollup import floor_day

        now = timezone.now()
        began = time.perf_counter()
        count = generate(now)
        print(f"generated {count} attempts in {time.perf_counter() - began:.1f} s", file=sys.stderr)
        began = time.perf_counter()
        rollup.rebuild()
        rebuild_seconds = time.perf_counter() - began
        day = floor_day(now) - timedelta(days=10)
        month = report.ReportQuery(now - timedelta(days=DAYS), now, by=("project",))
        by_pool_and_day = report.ReportQuery(now - timedelta(days=DAYS), now, by=("node_pool",), granularity="day")
        rows = report.usage(month, now=now)
        note = f"{count} attempts; {len(rows)} projects; full rebuild of the month {rebuild_seconds:.1f} s"
        rows = [
            measure(
                "usage: rollup of one day, month of a 1,000-GPU fleet",
                lambda: rollup.rebuild_hours(day, day + timedelta(days=1)),
                runs=5,
                warmup=1,
                target="≤ 2 s",
                note=note,
            ),
            measure(
                "usage: 30-day report by project (300 running)",
                lambda: report.usage(month, now=now),
                runs=20,
                target="≤ 200 ms",
            ),
            measure(
                "usage: 30-day report by node pool and day",
                lambda: report.usage(by_pool_and_day, now=now),
                runs=20,
            ),
        ]
        # The rebuild just marked 200,000 attempts rolled up: their dead entries in the partial index of the
        # attempts not rolled up make its scan visit every one until autovacuum cleans them. A deployment's
        # rollup job marks an hour's attempts at a time, so the steady state is the vacuumed table.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE usage_taskattempt")
        rows.append(
            measure(
                "usage: the usage part of a /metrics scrape (meters), that month rolled up, 748 running",
                lambda: meters.meters(now),
                runs=20,
            )
        )
        return rows
