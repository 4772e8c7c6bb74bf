"""The discrete-event simulation (pools.engine.simulation): a few simulated hours of seed 003's cluster under
a heavy synthetic workload, with the promises of every admission pass checked as it goes."""

from __future__ import annotations

from pools.engine.quota_pass import PassResult, PoolState
from pools.engine.simulation import HOUR, Workload, simulate
from tests.unit.test_reclaim_engine import check_invariants

# twice the docs' arrival rates: the A100 pools stay over-subscribed, so reclaim of every kind happens
BUSY = Workload(seconds=6 * HOUR, seed=11, rates_per_hour=(8.0, 6.0, 4.0, 2.0))


def test_a_busy_afternoon_keeps_every_promise_after_every_pass():
    seen = {"passes": 0, "strategies": set()}

    def check(state: PoolState, result: PassResult) -> None:
        seen["passes"] += 1
        check_invariants(state, result)  # non-preemptible ≤ deserved (projects, departments), saturation order
        assert sum(a.gpu for a in result.allocated_after.values()) <= state.capacity.gpu
        seen["strategies"] |= {v.reason["strategy"] for v in result.preempted}

    report = simulate(BUSY, check)
    assert seen["passes"] == report.passes > 100
    assert {"deserved", "department", "fair_share"} <= seen["strategies"], seen["strategies"]
    assert sum(row.preempted for row in report.rows.values()) > 0
    # work within its deserved quota when submitted starts within one admission period plus the victims'
    # minimum runtime (the bound), for every project
    bound = BUSY.period + BUSY.min_runtime_seconds
    for row in report.rows.values():
        assert row.waits and max(row.waits) <= bound, (row.project, max(row.waits, default=None))


def test_the_same_seed_gives_the_same_report():
    short = Workload(seconds=2 * HOUR, seed=5)
    first, again = simulate(short), simulate(short)
    assert first.table() == again.table() and first.passes == again.passes
    assert simulate(Workload(seconds=2 * HOUR, seed=6)).table() != first.table()
