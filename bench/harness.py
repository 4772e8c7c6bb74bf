"""Tiny benchmark harness: every bench module builds rows with `measure` and `make bench` prints them.

Medians, not means: these machines are noisy. A row may carry a target so readers see the gap.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Row:
    name: str
    median_s: float
    p99_s: float
    runs: int
    target: str = ""
    note: str = ""


def measure(
    name: str, fn: Callable[[], object], *, runs: int = 50, warmup: int = 3, target: str = "", note: str = ""
) -> Row:
    """Time `fn` `runs` times after `warmup` calls; one call is one sample."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return Row(name, statistics.median(samples), p99, runs, target, note)


def fmt_seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.1f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def print_table(rows: list[Row]) -> None:
    headers = ("benchmark", "median", "p99", "runs", "target", "note")
    table = [(r.name, fmt_seconds(r.median_s), fmt_seconds(r.p99_s), str(r.runs), r.target, r.note) for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("-" * len(line))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)))
