"""What-if over a week of a 1,000-GPU fleet (issue #32: ≤ 10 s): the replay (pools.engine.replay) of a synthetic
week, ~47,000 workflows of one task each (~47,000 task attempts), on five node pools, four departments of five
projects; the baseline and the same week with one project's quota raised, side by side as the what-if runs them
(quotas.services.replay_pair: the proposed replay in a forked child)."""

from __future__ import annotations

import math
import random
import sys
import time

from bench.harness import Row, measure
from pools.engine.admission_loop import DAY, HOUR
from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from pools.engine.replay import ReplayInput, ReplayJob
from quotas.services.replay_pair import replay_pair

FLEET = {"default": 400, "h100": 200, "a100-80gb": 200, "a100-40gb": 120, "l40": 80}  # 1,000 GPUs
DEPARTMENTS = {f"dept{d}": tuple(f"p{d}{p}" for p in range(5)) for d in range(4)}
SIZES = ((1, 0.3), (2, 0.3), (4, 0.3), (8, 0.1))
PRIORITIES = (("HIGH", 0.2), ("NORMAL", 0.6), ("LOW", 0.2))
PER_HOUR = 280  # ~47,000 a week
MEDIAN_SECONDS = 1800  # log-normal, sigma 1: ~70 % of the fleet busy on average


def fleet_trees(raise_project: str = "", to: int = 0) -> dict[str, QuotaTree]:
    """90 % of each node pool deserved, a quarter per department, split 40/15/15/15/15 among its projects."""
    trees = {}
    for pool, gpus in FLEET.items():
        per_department = gpus * 9 // 40
        departments, projects = [], []
        for department, names in DEPARTMENTS.items():
            departments.append(TeamQuota(department, {"gpu": Quota(per_department)}))
            split = [per_department * 40 // 100] + [per_department * 15 // 100] * 4
            for index, (name, deserved) in enumerate(zip(names, split, strict=True)):
                if name == raise_project:
                    deserved = min(to, per_department)
                priority = 1 if index == 0 else 0
                projects.append(TeamQuota(name, {"gpu": Quota(deserved)}, priority=priority, department=department))
        trees[pool] = QuotaTree(tuple(departments), tuple(projects))
    return trees


def week(seed: int = 32, seconds: int = 7 * DAY) -> tuple[ReplayJob, ...]:
    rng = random.Random(seed)
    projects = [p for names in DEPARTMENTS.values() for p in names]
    pools = list(FLEET)
    jobs, now, count = [], 0, 0
    while True:
        now += max(1, round(rng.expovariate(PER_HOUR / HOUR)))
        if now >= seconds:
            return tuple(jobs)
        count += 1
        gpus = rng.choices([s for s, _ in SIZES], [w for _, w in SIZES])[0]
        pool = rng.choices(pools, list(FLEET.values()))[0]
        parts = {pool: gpus}
        if rng.random() < 0.05:  # now and then a workflow across two node pools
            parts[rng.choice([p for p in pools if p != pool])] = 1
        duration = max(60, round(rng.lognormvariate(math.log(MEDIAN_SECONDS), 1.0)))
        priority = rng.choices([p for p, _ in PRIORITIES], [w for _, w in PRIORITIES])[0]
        jobs.append(ReplayJob(f"w{count}", rng.choice(projects), parts, now, duration, priority))


def what_if(jobs: tuple[ReplayJob, ...]) -> tuple:
    """As quotas.services.what_if runs them: the proposed replay in a forked child beside the baseline."""
    prices = {"default": 1.0, "h100": 4.0, "a100-80gb": 3.0, "a100-40gb": 2.0, "l40": 1.5}
    return replay_pair(
        ReplayInput(jobs, FLEET, fleet_trees(), 7 * DAY, prices=prices),
        ReplayInput(jobs, FLEET, fleet_trees("p01", 40), 7 * DAY, prices=prices),
    )


def run() -> list[Row]:
    jobs = week()
    cpu = time.process_time()
    baseline, proposed = what_if(jobs)
    cpu = time.process_time() - cpu  # this process's CPU (the baseline's): what other load does not inflate
    before, after = baseline.figures()["p01"], proposed.figures()["p01"]
    print(f"p01 baseline {before}\np01 proposed {after}", file=sys.stderr)
    note = (
        f"{len(jobs)} workflows, {sum(FLEET.values())} GPUs; baseline + proposed: "
        f"{baseline.passes} + {proposed.passes} passes; baseline: {cpu:.1f} s of CPU, proposed: in a child"
    )
    return [
        measure(
            "quota: what-if, a week of a 1,000-GPU fleet",
            lambda: what_if(jobs),
            runs=3,
            warmup=0,
            target="≤ 10 s",
            note=note,
        )
    ]
