"""Admission at scale (issue #30): one pass over every node pool of a large portal.

Scenario: 100 node pools of 64 GPUs (8 × 8-GPU nodes), 50 departments × 10 projects = 500 projects, each with
GPU, CPU and memory quotas in every node pool (Run:ai gives every project every node pool; a tenth of the
projects own each pool's guarantees, the rest borrow), 40 running workflows and 100 queued ones per node pool:
10,000 queued in all. "All node pools" is `pass_all`'s engine work: one pass per node pool. "Changed node pools
only" is the periodic pass once only 5 node pools have news: the others' fingerprint is unchanged, so they are
skipped (`pools.engine.quota_pass.state_fingerprint`; quotas.services.admission_passes.pass_all).
"""

from __future__ import annotations

import random
from dataclasses import replace

from bench.bench_quota import build_tree, decided, workload
from bench.harness import Row, measure
from pools.engine.quota_model import QuotaTree, Resources
from pools.engine.quota_pass import PoolState, QueuedWorkflow, run_admission, state_fingerprint
from pools.engine.reclaim import RunningWorkflow

POOLS, DEPARTMENTS, PROJECTS_PER_DEPARTMENT = 100, 50, 10
RUNNING_PER_POOL, QUEUED_PER_POOL = 40, 100
CAPACITY = Resources(gpu=64, cpu=1_024_000, memory=8 * 2**40)


def tree_for(pool: int) -> QuotaTree:
    """Every project in every node pool; the 50 projects p{d}-{k} with (d + k) % 10 == pool % 10 own it,
    1 GPU each: the guarantees (50) sum below the capacity (64)."""
    return build_tree(DEPARTMENTS, PROJECTS_PER_DEPARTMENT, lambda d, k: int((d + k) % 10 == pool % 10), "p{d}-{k}")


def scenario(seed: int = 30) -> list[PoolState]:
    rng = random.Random(seed)
    names = [f"p{d}-{k}" for d in range(DEPARTMENTS) for k in range(PROJECTS_PER_DEPARTMENT)]
    pools = []
    for n in range(POOLS):
        running, used = [], 0
        for i in range(RUNNING_PER_POOL):
            gpus = rng.choice([1, 1, 2])
            if used + gpus <= CAPACITY.gpu:
                used += gpus
                running.append(
                    RunningWorkflow(f"r{n}-{i}", rng.choice(names), workload(gpus), i % 2 == 0, rng.randrange(3600))
                )
        queued = tuple(
            QueuedWorkflow(
                f"q{n}-{i}",
                rng.choice(names),
                workload(rng.choice([1, 2, 4, 8])),
                float(i),
                rng.choice(["HIGH", "NORMAL", "NORMAL", "LOW"]),
            )
            for i in range(QUEUED_PER_POOL)
        )
        pools.append(PoolState(f"pool{n}", CAPACITY, tree_for(n), tuple(running), queued, True, 300, "A100 GPUs"))
    return pools


def periodic_pass(pools: list[PoolState], quiet: dict[str, int]) -> int:
    """pass_all's engine side: a node pool whose fingerprint a pass that changed nothing left is skipped."""
    passed = 0
    for state in pools:
        fingerprint = state_fingerprint(state)
        if quiet.get(state.name) != fingerprint:
            run_admission(state)
            passed += 1
    return passed


def run() -> list[Row]:
    pools = scenario()
    note = f"{decided(pools)}, 500 projects, {len(pools)} node pools"
    # the periodic pass after one where nothing changed anywhere but in 5 node pools (a new submission each)
    quiet = {p.name: state_fingerprint(p) for p in pools}
    changed = [
        replace(p, queued=(*p.queued, QueuedWorkflow(f"new-{n}", "p0-0", workload(1), 1e9))) if n % 20 == 0 else p
        for n, p in enumerate(pools)
    ]
    assert periodic_pass(changed, quiet) == 5
    return [
        measure(
            "quota: admission, 100 node pools, 10,000 queued",
            lambda: [run_admission(p) for p in pools],
            runs=7,
            warmup=1,
            target="≤ 1 s",
            note=note,
        ),
        measure(
            "quota: periodic pass, 5 of 100 node pools changed",
            lambda: periodic_pass(changed, quiet),
            runs=7,
            warmup=1,
            target="≤ 1 s",
            note="the other 95 skipped by their state fingerprint",
        ),
    ]
