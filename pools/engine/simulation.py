"""A discrete-event simulation of admission over the pure engine: a synthetic workload on seed 003's cluster
(docs/admission.md, "Simulation"). Pure: no Django, no I/O, no clock; the same seed gives the same report.

The cluster: the Default node pool, 20 × 4 V100 (80 GPUs); `a100-40gb`, 5 × 4 (20) owned by ML-Ops;
`a100-80gb`, 5 × 4 (20) owned by R&D. Two departments of four projects each. GPU quotas only.

The workload: per project, Poisson arrivals (its own rate per hour), 1/2/4/8-GPU workflows, log-normal
durations (median 1 h), a node pool drawn per workflow (mostly the department's own A100 pool and the
Default, now and then the other department's A100 pool), mixed workflow priorities.

The loop: events in time order — arrival, completion, periodic tick (the admission period) — and after each
arrival and completion, and at every tick for node pools with queued work, admission passes of the affected
node pool until nothing is preempted (at most `ROUNDS`, as quotas.services.admission_passes does). Admitted work
starts at once and runs its full duration; a victim stops at once, loses its work and is queued again with its
submission time (exit action RESCHEDULE). `check` (optional) is called after every pass with the state and
the result, so a test can assert invariants as the week goes by.

The report, per project: the time its workflows that were within its deserved quota when submitted waited to
start (p50/p99 — "time to get its deserved GPUs"), GPU-hours used against the GPU-hours of its fair share
(integrated at every tick), GPU-hours lost to preemption, and preemptions per day.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from pools.engine.fairshare import fair_share
from pools.engine.quota_model import Quota, QuotaTree, Resources, TeamQuota
from pools.engine.quota_pass import PassResult, PoolState, QueuedWorkflow, run_admission, state_fingerprint
from pools.engine.reclaim import RunningWorkflow

ROUNDS = 3
HOUR, DAY = 3600, 86400
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
class _Job:
    id: str
    project: str
    pool: str
    gpus: int
    duration: int
    submitted: int
    priority: str
    guaranteed: bool = False  # within its project's deserved quota when submitted
    started: int | None = None
    preemptible: bool = False
    version: int = 0  # a completion event of an older run is stale


@dataclass
class ProjectRow:
    project: str
    department: str
    waits: list[int] = field(default_factory=list)
    used: float = 0.0  # GPU-seconds
    fair: float = 0.0
    lost: float = 0.0
    preempted: int = 0

    def percentile(self, q: float) -> int | None:
        if not self.waits:
            return None
        ordered = sorted(self.waits)
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


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


Check = Callable[[PoolState, PassResult], None]


class Simulation:
    def __init__(self, workload: Workload = Workload(), check: Check | None = None) -> None:
        self.workload, self.check = workload, check
        self.rng = random.Random(workload.seed)
        self.trees = seed_trees()
        self.department_of = {p: d for d, names in DEPARTMENTS.items() for p in names}
        self.rows = {p: ProjectRow(p, d) for p, d in self.department_of.items()}
        self.queued: dict[str, dict[str, _Job]] = {pool: {} for pool in CAPACITY}
        self.running: dict[str, dict[str, _Job]] = {pool: {} for pool in CAPACITY}
        self.events: list[tuple[int, int, str, object]] = []
        self.sequence = 0
        self.now = 0
        self.passes = self.finished = self.count = self.skipped = 0
        self.quiet: dict[str, int] = {}  # node pool → fingerprint of its last pass that changed nothing

    # -- events ------------------------------------------------------------------------------------------------
    def push(self, at: int, kind: str, payload: object) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, payload))

    def run(self) -> Report:
        for department, names in DEPARTMENTS.items():
            for name, rate in zip(names, self.workload.rates_per_hour, strict=True):
                self.push(self.next_arrival(rate), "arrival", (name, department, rate))
        self.push(0, "tick", None)
        while self.events:
            at, _, kind, payload = heapq.heappop(self.events)
            if at > self.workload.seconds:
                break
            self.now = at
            getattr(self, kind)(payload)
        self.now = self.workload.seconds
        for jobs in self.running.values():  # work still running at the end counts up to the end
            for job in jobs.values():
                self.rows[job.project].used += job.gpus * (self.now - job.started)
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
        job = _Job(f"w{self.count}", project, pool, gpus, duration, self.now, priority)
        held = sum(j.gpus for j in (*self.running[pool].values(), *self.queued[pool].values()) if j.project == project)
        job.guaranteed = held + gpus <= self.deserved(pool, project)
        self.queued[pool][job.id] = job
        self.admit(pool)

    def completion(self, payload) -> None:
        pool, job_id, version = payload
        job = self.running[pool].get(job_id)
        if job is None or job.version != version:
            return
        del self.running[pool][job_id]
        self.rows[job.project].used += job.gpus * (self.now - job.started)
        self.finished += 1
        self.admit(pool)

    def tick(self, _payload) -> None:
        self.push(self.now + self.workload.period, "tick", None)
        for pool in CAPACITY:
            if self.queued[pool]:
                self.admit(pool, periodic=True)
            if self.now % self.workload.sample_every < self.workload.period:
                self.sample_fair_share(pool)

    # -- admission ---------------------------------------------------------------------------------------------
    def other_pool(self, department: str) -> str:
        return next(p for d, p in OWN_POOL.items() if d != department)

    def deserved(self, pool: str, project: str) -> int:
        return next(p.quota("gpu").deserved for p in self.trees[pool].projects if p.name == project)

    def state(self, pool: str) -> PoolState:
        running = tuple(
            RunningWorkflow(j.id, j.project, Resources(gpu=j.gpus), j.preemptible, self.now - j.started)
            for j in self.running[pool].values()
        )
        queued = tuple(
            QueuedWorkflow(j.id, j.project, Resources(gpu=j.gpus), float(j.submitted), j.priority)
            for j in self.queued[pool].values()
        )
        return PoolState(
            pool,
            Resources(gpu=CAPACITY[pool]),
            self.trees[pool],
            running,
            queued,
            min_runtime_seconds=self.workload.min_runtime_seconds,
        )

    def admit(self, pool: str, *, periodic: bool = False) -> None:
        """Passes until nothing is preempted; a periodic one skips a node pool with nothing new (as pass_all)."""
        for _ in range(ROUNDS):
            state = self.state(pool)
            fingerprint = state_fingerprint(state)
            if periodic and self.quiet.get(pool) == fingerprint:
                self.skipped += 1
                return
            result = run_admission(state)
            self.passes += 1
            if self.check:
                self.check(state, result)
            self.quiet[pool] = fingerprint if not (result.admitted or result.preempted) else None
            for victim in result.preempted:
                self.preempt(pool, victim.workflow)
            for admission in result.admitted:
                self.start(pool, admission.workflow, admission.preemptible)
            if not result.preempted:
                return

    def start(self, pool: str, job_id: str, preemptible: bool) -> None:
        job = self.queued[pool].pop(job_id)
        if job.started is None and job.guaranteed:
            self.rows[job.project].waits.append(self.now - job.submitted)
        job.started, job.preemptible = self.now, preemptible
        job.version += 1
        self.running[pool][job_id] = job
        self.push(self.now + job.duration, "completion", (pool, job_id, job.version))

    def preempt(self, pool: str, job_id: str) -> None:
        job = self.running[pool].pop(job_id)
        lost = job.gpus * (self.now - job.started)
        row = self.rows[job.project]
        row.used += lost
        row.lost += lost
        row.preempted += 1
        job.version += 1
        self.queued[pool][job_id] = job  # RESCHEDULE: queued again with its submission time

    def sample_fair_share(self, pool: str) -> None:
        requests: dict[str, Resources] = {}
        for job in (*self.running[pool].values(), *self.queued[pool].values()):
            requests[job.project] = requests.get(job.project, Resources()) + Resources(gpu=job.gpus)
        gpus = {project: amount.gpu for project, amount in requests.items()}
        for project, share in fair_share(CAPACITY[pool], self.trees[pool], "gpu", gpus).projects.items():
            self.rows[project].fair += share.fair_share * self.workload.sample_every


def simulate(workload: Workload = Workload(), check: Check | None = None) -> Report:
    """Run the simulation (module docstring); deterministic by `workload.seed`."""
    return Simulation(workload, check).run()
