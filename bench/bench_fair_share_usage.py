"""The time-based fair share's read of past usage (docs/quotas.md, "Time-based fair share"), on the usage
record of bench_usage: a month of a 1,000-GPU fleet, about 200,000 attempts over 4 node pools, some running.

Rows: one node pool's usage per project over a week (no decay, and a 24-hour half-life) and over 30 days: what
each admission pass of a node pool with the block set reads once (target ≤ 100 ms for the week)."""

from __future__ import annotations

import sys
import time
from datetime import timedelta

from bench.bench_usage import generate
from bench.django_env import throwaway_database
from bench.harness import Row, measure


def run() -> list[Row]:
    with throwaway_database():
        from django.utils import timezone

        from usage.services.history import usage_by_project

        now = timezone.now()
        began = time.perf_counter()
        count = generate(now)
        print(f"generated {count} attempts in {time.perf_counter() - began:.1f} s", file=sys.stderr)
        week, month = now - timedelta(days=7), now - timedelta(days=30)
        projects = len(usage_by_project("h100", week, now))
        return [
            measure(
                "fair share usage: one node pool, a week, no decay",
                lambda: usage_by_project("h100", week, now),
                runs=20,
                target="≤ 100 ms",
                note=f"{count} attempts in the record; {projects} projects in h100",
            ),
            measure(
                "fair share usage: one node pool, a week, half-life 24 h",
                lambda: usage_by_project("h100", week, now, 24 * 3600),
                runs=20,
                target="≤ 100 ms",
            ),
            measure(
                "fair share usage: one node pool, 30 days, half-life 24 h",
                lambda: usage_by_project("h100", month, now, 24 * 3600),
                runs=10,
            ),
        ]
