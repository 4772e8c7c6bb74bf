"""The discrete-event simulation of a week on seed 003's cluster (pools.engine.simulation, issue #30): one
run, timed; its table is printed to stderr so `make bench` shows it (docs/admission.md, "Simulation")."""

from __future__ import annotations

import sys

from bench.harness import Row, measure
from pools.engine.simulation import Workload, simulate


def run() -> list[Row]:
    report = simulate(Workload())
    print(report.table(), file=sys.stderr)
    preemptions = sum(row.preempted for row in report.rows.values())
    note = (
        f"1 week, seed {report.workload.seed}: {report.workflows} workflows, {report.passes} passes "
        f"({report.skipped} periodic ones skipped, nothing new), {preemptions / 7:.1f} preemptions/day"
    )
    return [
        measure("quota: simulation, one week of seed 003", lambda: simulate(Workload()), runs=1, warmup=0, note=note)
    ]
