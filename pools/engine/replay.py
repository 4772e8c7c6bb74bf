"""What-if: replay a period's workload through the admission loop (pools.engine.admission_loop, the one the
synthetic week runs) under given capacities and quota trees, and say per job when it started and how often it
was preempted, and per project its waits, GPU-hours, preemptions, idle guarantee and cost (docs/quotas.md,
"What-if"). Pure: no Django, no I/O, no clock; the same input gives the same report.

Time is in seconds from the period's start. Each job arrives at `arrival` (its submission), asks `parts` (GPUs
per node pool) and, once its last part is admitted, runs `duration` seconds. A job that never ran in the record
(cancelled or timed out while queued: `duration` None) arrives all the same — its demand counts in the fair
shares and the queue while it waits — and leaves at `arrival + cancel_after` if it has not started by then; if
the replay starts it earlier it ends at once (it would have been cancelled: it does no work).

The replay runs past the period's end until every job has finished (at most `drain_seconds` more): a job
submitted in the period counts whole, as the record does. Per project:
- `waits`: submission → first start, of its jobs that started (p50, p95 by nearest rank);
- GPU-hours used (preempted work included), and lost to preemption; preemptions;
- idle guarantee: GPU-hours of its deserved quota it did not use over the period, as the usage report counts
  them (usage.services.guarantee): per node pool and hour, `max(0, deserved × 3600 − GPU-seconds held)`, using
  more in one hour making up for nothing in another; what it holds (reserved parts included) is integrated
  exactly, from each part's admission to its end;
- cost: its GPU-hours per node pool × that node pool's price per GPU-hour (`prices`, 0 when not given).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from pools.engine.admission_loop import DAY, HOUR, AdmissionLoop, Check, Counters, Job, percentile
from pools.engine.errors import EngineError
from pools.engine.quota_model import QuotaTree


@dataclass(frozen=True)
class ReplayJob:
    id: str
    project: str
    parts: Mapping[str, int]  # node pool → GPUs
    arrival: int  # seconds from the period's start
    duration: int | None  # seconds it runs once started; None: it never ran (see the module docstring)
    priority: str = "NORMAL"
    cancel_after: int = 0  # never ran: seconds after arrival it left the queue


@dataclass(frozen=True)
class ReplayInput:
    jobs: tuple[ReplayJob, ...]
    capacity: Mapping[str, int]  # node pool → GPUs
    trees: Mapping[str, QuotaTree]  # node pool → its quota tree
    seconds: int  # the period's length
    period: int = 60  # the admission period
    min_runtime_seconds: int | Mapping[str, int] = 600  # one for all, or per node pool
    prices: Mapping[str, float] = field(default_factory=dict)  # node pool → price of one GPU-hour
    drain_seconds: int = 7 * DAY


@dataclass(frozen=True)
class JobOutcome:
    id: str
    project: str
    submitted: int
    started: int | None  # its first start (None: never started)
    ended: int | None
    preemptions: int
    cancelled: bool = False


@dataclass
class ProjectOutcome(Counters):
    project: str = ""
    waits: list[int] = field(default_factory=list)
    jobs: int = 0
    unstarted: int = 0
    idle: float = 0.0  # GPU-seconds of deserved not used
    used_by_pool: dict[str, float] = field(default_factory=dict)  # GPU-seconds

    def cost(self, prices: Mapping[str, float]) -> float:
        return sum(seconds / HOUR * prices.get(pool, 0.0) for pool, seconds in self.used_by_pool.items())

    def figures(self, prices: Mapping[str, float]) -> dict:
        """The what-if's row: waits in seconds, GPU-hours, cost in the prices' unit."""
        return {
            "jobs": self.jobs,
            "started": len(self.waits),
            "never_started": self.unstarted,
            "wait_p50_s": percentile(self.waits, 0.5),
            "wait_p95_s": percentile(self.waits, 0.95),
            "gpu_hours": round(self.used / HOUR, 2),
            "gpu_hours_lost": round(self.lost / HOUR, 2),
            "preemptions": self.preempted,
            "idle_guarantee_gpu_hours": round(self.idle / HOUR, 2),
            "cost": round(self.cost(prices), 2),
        }


@dataclass
class ReplayReport:
    input: ReplayInput
    jobs: dict[str, JobOutcome]
    projects: dict[str, ProjectOutcome]
    passes: int
    seconds_run: int  # simulated seconds, the drain included

    def admissions(self) -> dict[str, int | None]:
        """Job id → its first start: what "the same admissions" compares."""
        return {job.id: job.started for job in self.jobs.values()}

    def figures(self) -> dict[str, dict]:
        return {name: row.figures(self.input.prices) for name, row in sorted(self.projects.items())}


class Replay(AdmissionLoop):
    skip_idle = True  # a completion where nothing waits decides nothing: the replay does not pass there

    def __init__(self, given: ReplayInput, check: Check | None = None) -> None:
        _check(given)
        super().__init__(
            given.capacity,
            given.trees,
            period=given.period,
            min_runtime_seconds=given.min_runtime_seconds,
            sample_every=HOUR,  # nothing is sampled: the idle guarantee is integrated exactly (`holding`)
            check=check,
        )
        self.given = given
        self.pending: dict[str, deque[ReplayJob]] = {}
        for job in given.jobs:  # projects in the order they first appear: the order of their first events
            self.pending.setdefault(job.project, deque()).append(job)
        for project, queue in self.pending.items():
            self.pending[project] = deque(sorted(queue, key=lambda j: j.arrival))  # stable: ties keep the input's order
        self.left = len(given.jobs)
        self.jobs: dict[str, Job] = {}
        self.cancelled: set[str] = set()
        self.deserved = {
            pool: {p.name: p.quota("gpu").deserved for p in tree.projects if p.quota("gpu").deserved > 0}
            for pool, tree in given.trees.items()
        }
        for projects in self.deserved.values():
            for name in projects:
                self.row(name)
        self.held: dict[tuple[str, str], list[int]] = {}  # (node pool, project) → [GPUs held now, since when]
        self.held_by_hour: dict[tuple[str, str, int], int] = {}  # (node pool, project, hour) → GPU-seconds held

    def row(self, project: str) -> ProjectOutcome:
        found = self.rows.get(project)
        if found is None:
            found = self.rows[project] = ProjectOutcome(project=project)
        return found

    def run(self) -> ReplayReport:
        for project, queue in self.pending.items():  # each project's next arrival is pushed by its last one
            self.push(queue[0].arrival, "arrival", project)
        self.push(0, "tick", None)
        self.loop(self.given.seconds + self.given.drain_seconds)
        self.count_idle()
        return ReplayReport(self.given, self._outcomes(), self.rows, self.passes, self.now)

    def drained(self) -> bool:
        """Nothing more to replay, and the period (its idle guarantee) is over."""
        nothing = not self.left and not any(self.queued.values()) and not any(self.running.values())
        return nothing and self.now >= self.given.seconds

    def arrival(self, project: str) -> None:
        queue = self.pending[project]
        recorded = queue.popleft()
        if queue:
            self.push(queue[0].arrival, "arrival", project)
        self.left -= 1
        never_ran = recorded.duration is None
        job = Job(recorded.id, project, dict(recorded.parts), recorded.duration or 0, self.now, recorded.priority)
        self.jobs[job.id] = job
        self.row(project).jobs += 1
        if never_ran:
            self.push(self.now + recorded.cancel_after, "cancel", job)
        self.enqueue(job)

    def cancel(self, job: Job) -> None:
        """A job that never ran leaves the queue when the record says it did, unless it has started."""
        if job.first_started is not None:
            return
        self.cancelled.add(job.id)
        held = [pool for pool in job.parts if job.id in self.running[pool]]
        for pool in job.parts:
            self.queued[pool].pop(job.id, None)
            self.quiet[pool] = None
            if self.running[pool].pop(job.id, None) is not None:
                self.tally(pool, job, -1)
                self.holding(pool, job, -1)
        job.ended = self.now
        for pool in held:
            self.admit(pool)

    def start(self, job: Job) -> None:
        if job.first_started is None:
            self.row(job.project).waits.append(self.now - job.submitted)
        super().start(job)

    def account(self, job: Job, seconds: int, *, lost: bool = False) -> None:
        super().account(job, seconds, lost=lost)
        by_pool = self.row(job.project).used_by_pool
        for pool, gpus in job.parts.items():
            by_pool[pool] = by_pool.get(pool, 0.0) + gpus * seconds

    def holding(self, pool: str, job: Job, sign: int) -> None:
        """Integrate what each project with a guarantee holds, per node pool and hour of the period."""
        if job.project not in self.deserved.get(pool, ()):
            return
        key = (pool, job.project)
        held = self.held.setdefault(key, [0, 0])
        self.integrate(key, held)
        held[0] += sign * job.parts[pool]

    def integrate(self, key: tuple[str, str], held: list[int]) -> None:
        """Count `held` GPUs from its last change up to now (within the period), hour by hour."""
        start, end = held[1], min(self.now, self.given.seconds)
        held[1] = max(held[1], end)
        while held[0] and start < end:
            hour = start // HOUR
            upto = min(end, (hour + 1) * HOUR)
            slot = (*key, hour)
            self.held_by_hour[slot] = self.held_by_hour.get(slot, 0) + held[0] * (upto - start)
            start = upto

    def count_idle(self) -> None:
        """Each project's idle guarantee: per node pool and hour of the period, its deserved GPU-seconds unheld."""
        self.now = max(self.now, self.given.seconds)
        for key, held in self.held.items():
            self.integrate(key, held)
        hours = -(-self.given.seconds // HOUR)
        for pool, projects in self.deserved.items():
            for project, gpus in projects.items():
                for hour in range(hours):
                    span = min(HOUR, self.given.seconds - hour * HOUR)
                    used = self.held_by_hour.get((pool, project, hour), 0)
                    self.rows[project].idle += max(0, gpus * span - used)

    def _outcomes(self) -> dict[str, JobOutcome]:
        found = {}
        for job in self.jobs.values():
            if job.first_started is None:
                self.row(job.project).unstarted += 1
            found[job.id] = JobOutcome(
                job.id,
                job.project,
                job.submitted,
                job.first_started,
                job.ended,
                job.preemptions,
                job.id in self.cancelled,
            )
        return found


def _check(given: ReplayInput) -> None:
    """Refuse what the loop cannot replay: a part in a node pool without capacity or tree, a negative figure."""
    for pool in given.capacity:
        if pool not in given.trees:
            raise EngineError("node pool without a quota tree", field="trees", value=pool)
        if given.capacity[pool] < 0:
            raise EngineError("capacity cannot be negative", field=f"capacity.{pool}", value=given.capacity[pool])
    for job in given.jobs:
        for pool, gpus in job.parts.items():
            if pool not in given.capacity:
                raise EngineError("unknown node pool", field=f"jobs.{job.id}.parts", value=pool)
            if gpus < 0:
                raise EngineError("GPUs cannot be negative", field=f"jobs.{job.id}.parts.{pool}", value=gpus)
        if not job.parts:
            raise EngineError("a job asks for no node pool", field=f"jobs.{job.id}.parts")
    if given.period <= 0:
        raise EngineError("the admission period must be positive", field="period", value=given.period)


def replay(given: ReplayInput, check: Check | None = None) -> ReplayReport:
    """Replay `given` (module docstring); deterministic."""
    return Replay(given, check).run()
