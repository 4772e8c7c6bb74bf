"""Quota engine benchmarks (issue #13): admission passes and fair share.

Scenario: 10 node pools of 64 GPUs (8 × 8-GPU nodes, 1,024 cores, 8 TiB each), 5 departments × 10 projects
= 50 projects with GPU, CPU and memory quotas in every pool (a fifth of the projects own each pool's
guarantees, the rest borrow), 250 running workflows (half preemptible, about 50 GPUs per pool) and 1,000
queued ones spread over the pools. "All pools" is one pass per node pool, as the admission task runs
them; "one pool, 1,000 queued" puts the whole queue on one pool (the worst case of a single pass).
"""

from __future__ import annotations

import random

from bench.harness import Row, measure
from pools.engine.fairshare import fair_shares
from pools.engine.quota_model import Quota, QuotaTree, Resources, TeamQuota
from pools.engine.quota_pass import PoolState, QueuedWorkflow, run_admission
from pools.engine.reclaim import RunningWorkflow

POOLS, DEPARTMENTS, PROJECTS_PER_DEPARTMENT = 10, 5, 10
CAPACITY = Resources(gpu=64, cpu=1_024_000, memory=8 * 2**40)
GIB = 2**30


def tree_for(pool: int) -> QuotaTree:
    """Each pool is owned by the projects p{d}{k} with k ≡ pool (mod 5): 10 owners with 6 GPUs each."""
    return build_tree(DEPARTMENTS, PROJECTS_PER_DEPARTMENT, lambda d, k: 6 if k % 5 == pool % 5 else 0, "p{d}{k}")


def build_tree(departments: int, per_department: int, gpus_of, name: str) -> QuotaTree:
    """`departments` × `per_department` projects (named by `name`.format(d=, k=)) with the GPUs `gpus_of(d, k)`
    deserves and CPU and memory in proportion (12 cores, 96 GiB a GPU); each department deserves its
    projects' sum. Weights 1–3 and priorities 0–1 by project index."""
    teams, projects = [], []
    for d in range(departments):
        owned = 0
        for k in range(per_department):
            gpus = gpus_of(d, k)
            owned += gpus
            quotas = {
                "gpu": Quota(gpus, None, 1 + k % 3),
                "cpu": Quota(gpus * 12_000, None, 1),
                "memory": Quota(gpus * 96 * GIB, None, 1),
            }
            projects.append(TeamQuota(name.format(d=d, k=k), quotas, priority=k % 2, department=f"d{d}"))
        dept = {"gpu": Quota(owned), "cpu": Quota(owned * 12_000), "memory": Quota(owned * 96 * GIB)}
        teams.append(TeamQuota(f"d{d}", dept))
    return QuotaTree(tuple(teams), tuple(projects))


def workload(gpus: int) -> Resources:
    return Resources(gpus, gpus * 12_000 + 2_000, gpus * 96 * GIB + 8 * GIB)


def scenario(seed: int = 13) -> list[PoolState]:
    rng = random.Random(seed)
    names = [f"p{d}{k}" for d in range(DEPARTMENTS) for k in range(PROJECTS_PER_DEPARTMENT)]
    running: list[list[RunningWorkflow]] = [[] for _ in range(POOLS)]
    queued: list[list[QueuedWorkflow]] = [[] for _ in range(POOLS)]
    used = [0] * POOLS
    for i in range(250):
        pool, gpus = rng.randrange(POOLS), rng.choice([1, 1, 2, 4])
        if used[pool] + gpus <= CAPACITY.gpu:
            used[pool] += gpus
            wf = RunningWorkflow(f"r{i}", rng.choice(names), workload(gpus), i % 2 == 0, rng.randrange(3600))
            running[pool].append(wf)
    for i in range(1000):
        pool = rng.randrange(POOLS)
        priority = rng.choice(["HIGH", "NORMAL", "NORMAL", "LOW"])
        wf = QueuedWorkflow(f"q{i}", rng.choice(names), workload(rng.choice([1, 2, 4, 8])), float(i), priority)
        queued[pool].append(wf)
    return [
        PoolState(f"pool{n}", CAPACITY, tree_for(n), tuple(running[n]), tuple(queued[n]), True, 300, "A100 GPUs")
        for n in range(POOLS)
    ]


def decided(pools: list[PoolState]) -> str:
    """What one pass over every node pool decides, in words."""
    decisions = [run_admission(p) for p in pools]
    admitted, preempted = sum(len(d.admitted) for d in decisions), sum(len(d.preempted) for d in decisions)
    return f"{sum(len(p.queued) for p in pools)} queued: {admitted} admitted, {preempted} preempted"


def run() -> list[Row]:
    pools = scenario()
    note = f"{decided(pools)}, 50 projects"
    everything = PoolState(
        "one",
        CAPACITY,
        pools[0].tree,
        pools[0].running,
        tuple(w for p in pools for w in p.queued),
        True,
        300,
    )
    requests: dict[str, Resources] = {}
    for wf in (*everything.running, *everything.queued):
        requests[wf.project] = requests.get(wf.project, Resources()) + (
            wf.usage if isinstance(wf, RunningWorkflow) else wf.demand
        )
    return [
        measure(
            "quota: admission, all 10 node pools",
            lambda: [run_admission(p) for p in pools],
            target="≤ 100 ms",
            note=note,
        ),
        measure("quota: admission, one pool, 1,000 queued", lambda: run_admission(everything), target="≤ 100 ms"),
        measure(
            "quota: fair share, one pool (gpu, cpu, memory)",
            lambda: fair_shares(CAPACITY, everything.tree, requests),
            runs=200,
            target="≤ 5 ms",
            note="50 projects, 5 departments",
        ),
    ]
