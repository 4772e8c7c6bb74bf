"""A discrete-event simulation of admission over the pure engine: a synthetic workload on seed 003's cluster
(docs/admission.md, "Simulation"). Pure: no Django, no I/O, no clock; the same seed gives the same report.

The cluster: the Default node pool, 20 × 4 V100 (80 GPUs); `a100-40gb`, 5 × 4 (20) owned by ML-Ops;
`a100-80gb`, 5 × 4 (20) owned by R&D. Two departments of four projects each. GPU quotas only.

The workload: per project, Poisson arrivals (its own rate per hour), 1/2/4/8-GPU workflows, log-normal
durations (median 1 h), a node pool drawn per workflow (mostly the department's own A100 pool and the
Default, now and then the other department's A100 pool), mixed workflow priorities.

The loop (pools.engine.admission_loop, shared with the what-if replay): events in time order — arrival,
completion, periodic tick (the admission period) — and after each arrival and completion, and at every tick for
node pools with queued work, admission passes of the affected node pool until nothing is preempted (at most
`ROUNDS`, as quotas.services.admission_passes does). Admitted work starts at once and runs its full duration; a
victim stops at once, loses its work and is queued again with its submission time (exit action RESCHEDULE).
`check` (optional) is called after every pass with the state and the result, so a test can assert invariants as
the week goes by.

The report, per project: the time its workflows that were within its deserved quota when submitted waited to
start (p50/p99 — "time to get its deserved GPUs"), GPU-hours used against the GPU-hours of its fair share
(integrated at every tick), GPU-hours lost to preemption, and preemptions per day.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from pools.engine.admission_loop import DAY, HOUR, ROUNDS, AdmissionLoop, Check, Counters, Job, percentile
from pools.engine.fairshare import fair_share
from pools.engine.quota_model import Quota, QuotaTree, Resources, TeamQuota

__all__ = ["DAY", "HOUR", "ROUNDS", "Check", "Report", "Simulation", "Workload", "seed_trees", "simulate"]

DEPARTMENTS = {"rnd": ("build", "train", "research", "eval"), "mlops": ("infer", "serve", "monitor", "batch")}
OWN_POOL = {"rnd": "a100-80gb", "mlops": "a100-40gb"}
CAPACITY = {"default": 80, "a100-40gb": 20, "a100-80gb": 20}
SIZES = ((1, 0.3), (2, 0.3), (4, 0.3), (8, 0.1))
PRIORITIES = (("HIGH", 0.2), ("NORMAL", 0.6), ("LOW", 0.2))


@dataclass(frozen=True)
class Workload:
    """The synthetic workload's knobs (defaults: the docs' table)."""

    seconds: int = 7 * DAY
    seed: int = 3
    rates_per_hour: tuple[float, ...] = (4.0, 3.0, 2.0, 1.0)  # per project, in each department's order
    median_hours: float = 1.0
    sigma: float = 1.0
    period: int = 60  # the admission period
    sample_every: int = 300  # fair share is integrated at this step
    min_runtime_seconds: int = 600


def seed_trees() -> dict[str, QuotaTree]:
    """Seed 003's quotas: each department deserves 20 V100s in the Default (5 per project, weights 1) and its
    own A100 pool's 20 (8 + 4 + 4 + 4); the first project of each department ranks higher (priority 1)."""
    trees = {}
    for pool in CAPACITY:
        departments, projects = [], []
        for department, names in DEPARTMENTS.items():
            owner = OWN_POOL[department] == pool
            deserved = 20 if pool == "default" or owner else 0
            departments.append(TeamQuota(department, {"gpu": Quota(deserved)}))
            split = (5, 5, 5, 5) if pool == "default" else (8, 4, 4, 4) if owner else (0, 0, 0, 0)
            for name, gpus, rank in zip(names, split, (1, 0, 0, 0), strict=True):
                projects.append(TeamQuota(name, {"gpu": Quota(gpus)}, priority=rank, department=department))
        trees[pool] = QuotaTree(tuple(departments), tuple(projects))
    return trees


@dataclass
class ProjectRow(Counters):
    project: str = ""
    department: str = ""
    waits: list[int] = field(default_factory=list)  # of its guaranteed workflows
    fair: float = 0.0  # GPU-seconds of fair share

    def percentile(self, q: float) -> int | None:
        return percentile(self.waits, q)


@dataclass
class Report:
    workload: Workload
    rows: dict[str, ProjectRow]
    workflows: int
    passes: int
    finished: int
    skipped: int = 0  # periodic passes skipped: nothing had changed

    def table(self) -> str:
        """The docs' table (markdown)."""
        days = self.workload.seconds / DAY

        def minutes(value: int | None) -> str:
            return "–" if value is None else f"{value / 60:.1f}"

        lines = [
            "| project | dept | guaranteed waits | p50 (min) | p99 (min) | GPU-h used | GPU-h fair share | used / fair "
            "| GPU-h lost | preemptions/day |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in self.rows.values():
            ratio = f"{row.used / row.fair:.2f}" if row.fair else "–"
            lines.append(
                f"| {row.project} | {row.department} | {len(row.waits)} | {minutes(row.percentile(0.5))} "
                f"| {minutes(row.percentile(0.99))} | {row.used / HOUR:.0f} | {row.fair / HOUR:.0f} | {ratio} "
                f"| {row.lost / HOUR:.0f} | {row.preempted / days:.1f} |"
            )
        return "\n".join(lines)


class Simulation(AdmissionLoop):
    def __init__(self, workload: Workload = Workload(), check: Check | None = None) -> None:
        super().__init__(
            CAPACITY,
            seed_trees(),
            period=workload.period,
            min_runtime_seconds=workload.min_runtime_seconds,
            sample_every=workload.sample_every,
            check=check,
        )
        self.workload = workload
        self.rng = random.Random(workload.seed)
        self.department_of = {p: d for d, names in DEPARTMENTS.items() for p in names}
        self.rows = {p: ProjectRow(project=p, department=d) for p, d in self.department_of.items()}
        self.count = 0

    def run(self) -> Report:
        for department, names in DEPARTMENTS.items():
            for name, rate in zip(names, self.workload.rates_per_hour, strict=True):
                self.push(self.next_arrival(rate), "arrival", (name, department, rate))
        self.push(0, "tick", None)
        self.loop(self.workload.seconds)
        return Report(self.workload, self.rows, self.count, self.passes, self.finished, self.skipped)

    def next_arrival(self, rate: float) -> int:
        return self.now + max(1, round(self.rng.expovariate(rate / HOUR)))

    def arrival(self, payload) -> None:
        project, department, rate = payload
        self.push(self.next_arrival(rate), "arrival", payload)
        rng = self.rng
        draw = rng.random()
        pool = OWN_POOL[department] if draw < 0.4 else "default" if draw < 0.9 else self.other_pool(department)
        gpus = rng.choices([s for s, _ in SIZES], [w for _, w in SIZES])[0]
        duration = max(60, round(rng.lognormvariate(math.log(self.workload.median_hours * HOUR), self.workload.sigma)))
        priority = rng.choices([p for p, _ in PRIORITIES], [w for _, w in PRIORITIES])[0]
        self.count += 1
        job = Job(f"w{self.count}", project, {pool: gpus}, duration, self.now, priority)
        held = sum(j.gpus for j in (*self.running[pool].values(), *self.queued[pool].values()) if j.project == project)
        job.guaranteed = held + gpus <= self.deserved(pool, project)
        self.enqueue(job)

    def start(self, job: Job) -> None:
        if job.first_started is None and job.guaranteed:
            self.rows[job.project].waits.append(self.now - job.submitted)
        super().start(job)

    def other_pool(self, department: str) -> str:
        return next(p for d, p in OWN_POOL.items() if d != department)

    def deserved(self, pool: str, project: str) -> int:
        return next(p.quota("gpu").deserved for p in self.trees[pool].projects if p.name == project)

    def sample(self, pool: str) -> None:
        """Integrate each project's fair share of the node pool's GPUs."""
        requests: dict[str, Resources] = {}
        for job in (*self.running[pool].values(), *self.queued[pool].values()):
            requests[job.project] = requests.get(job.project, Resources()) + Resources(gpu=job.gpus)
        gpus = {project: amount.gpu for project, amount in requests.items()}
        for project, share in fair_share(CAPACITY[pool], self.trees[pool], "gpu", gpus).projects.items():
            self.rows[project].fair += share.fair_share * self.workload.sample_every


def simulate(workload: Workload = Workload(), check: Check | None = None) -> Report:
    """Run the simulation (module docstring); deterministic by `workload.seed`."""
    return Simulation(workload, check).run()
