"""The event loop of admission over time, shared by the synthetic week (pools.engine.simulation) and the what-if
replay of a recorded period (pools.engine.replay). Pure: no Django, no I/O, no clock.

Events in time order — an arrival, a completion, the periodic tick (every admission `period`) — each a method
of the loop; ties go to the event pushed first. After an arrival and a completion, and at every tick for the
node pools with queued work, admission passes of the node pool (`pools.engine.quota_pass.run_admission`) until
nothing is preempted (at most `ROUNDS`, as quotas.services.admission_passes does); a periodic pass skips a node
pool whose state is the one of its last pass that changed nothing (the state fingerprint, as `pass_all`).

A job asks for GPUs in one or more node pools (its parts). Each part is queued in its node pool and admitted by
that node pool's pass; an admitted part holds its room (reserved: the engine sees it with exactly the minimum
runtime, so it is the first reclaimed, as quotas.services.state does) until the job's last part is admitted:
the job then starts and runs its full duration. A preempted part stops the whole job (gang): its work is
lost and every part is queued again with its submission time (exit action RESCHEDULE).

Teams: a project without quota in a node pool is the team `(none)` there, always preemptible, ranked after every
project (quota_model.with_no_project), as the live admission does.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pools.engine.quota_model import NO_PROJECT, QuotaTree, Resources, with_no_project
from pools.engine.quota_pass import PassResult, PoolState, QueuedWorkflow, run_admission, state_fingerprint
from pools.engine.reclaim import RunningWorkflow

ROUNDS = 3
HOUR, DAY = 3600, 86400

Check = Callable[[PoolState, PassResult], None]


@dataclass
class Job:
    """One workflow: its GPUs per node pool (`parts`), how long it runs once started, when it was submitted."""

    id: str
    project: str
    parts: dict[str, int]
    duration: int
    submitted: int
    priority: str = "NORMAL"
    guaranteed: bool = False  # the synthetic week's: within its project's deserved quota when submitted
    preemptible: dict[str, bool] = field(default_factory=dict)  # per admitted part
    started: int | None = None  # this run's start (None: not running)
    first_started: int | None = None
    ended: int | None = None
    preemptions: int = 0
    version: int = 0  # a completion event of an older run is stale

    def __post_init__(self) -> None:
        self.gpus = sum(self.parts.values())
        self.usage = {pool: Resources(gpu=gpus) for pool, gpus in self.parts.items()}  # built once, read per pass


def percentile(values: list[int], q: float) -> int | None:
    """The nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


@dataclass
class Counters:
    """A project's GPU-seconds used (preempted work included) and lost to preemption, and its preemptions."""

    used: float = 0.0
    lost: float = 0.0
    preempted: int = 0


class AdmissionLoop:
    """The loop; a subclass brings the arrivals (an `arrival` event handler) and what to sample at ticks."""

    skip_idle = False  # skip a node pool's event pass when nothing is queued there (it would decide nothing)

    def __init__(
        self,
        capacity: Mapping[str, int],
        trees: Mapping[str, QuotaTree],
        *,
        period: int,
        min_runtime_seconds: int | Mapping[str, int],
        sample_every: int,
        check: Check | None = None,
    ) -> None:
        self.capacity, self.check = dict(capacity), check
        self.period, self.sample_every = period, sample_every
        runtimes = min_runtime_seconds if isinstance(min_runtime_seconds, Mapping) else {}
        default = 0 if isinstance(min_runtime_seconds, Mapping) else min_runtime_seconds
        self.min_runtime = {pool: runtimes.get(pool, default) for pool in self.capacity}  # per node pool
        self.trees = dict(trees)
        self.known = {pool: {p.name for p in tree.projects} for pool, tree in self.trees.items()}
        self.with_none = {pool: with_no_project(tree) for pool, tree in self.trees.items()}
        self.queued: dict[str, dict[str, Job]] = {pool: {} for pool in self.capacity}
        self.running: dict[str, dict[str, Job]] = {pool: {} for pool in self.capacity}
        self.rows: dict[str, Counters] = {}
        self.events: list[tuple[int, int, str, object]] = []
        self.sequence = 0
        self.now = 0
        self.passes = self.finished = self.skipped = 0
        self.quiet: dict[str, int | None] = {}  # node pool → fingerprint of its last pass that changed nothing

    # -- events ------------------------------------------------------------------------------------------------
    def push(self, at: int, kind: str, payload: object) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, payload))

    def loop(self, until: int) -> None:
        """Handle events up to `until` (or until `drained`), then count the work still running up to now."""
        while self.events:
            at, _, kind, payload = heapq.heappop(self.events)
            if at > until:
                self.now = until
                break
            self.now = at
            if kind == "tick" and self.drained():
                break
            getattr(self, kind)(payload)
        else:
            self.now = until
        for job in {j.id: j for jobs in self.running.values() for j in jobs.values()}.values():
            if job.started is not None:  # work still running at the end counts up to the end
                self.account(job, self.now - job.started)

    def drained(self) -> bool:
        """Nothing more can happen (a replay stops there); the synthetic week runs its full length."""
        return False

    def row(self, project: str) -> Counters:
        return self.rows[project]

    def account(self, job: Job, seconds: int, *, lost: bool = False) -> None:
        """`seconds` of the job's GPUs used (and `lost`: its work thrown away by a preemption)."""
        row = self.row(job.project)
        used = job.gpus * seconds
        row.used += used
        if lost:
            row.lost += used

    def enqueue(self, job: Job) -> None:
        """A new job: each part queued in its node pool, which passes at once."""
        for pool in job.parts:
            self.queued[pool][job.id] = job
        for pool in job.parts:
            self.admit(pool)

    def completion(self, payload) -> None:
        job, version = payload
        if job.version != version or job.started is None:
            return
        for pool in job.parts:
            del self.running[pool][job.id]
            self.holding(pool, job, -1)
        self.account(job, self.now - job.started)
        job.started, job.ended = None, self.now
        self.finished += 1
        for pool in job.parts:
            self.admit(pool)

    def tick(self, _payload) -> None:
        self.push(self.now + self.period, "tick", None)
        for pool in self.capacity:
            if self.queued[pool]:
                self.admit(pool, periodic=True)
            if self.now % self.sample_every < self.period:
                self.sample(pool)

    def sample(self, pool: str) -> None:
        """Called every `sample_every` seconds per node pool (integrals over time)."""

    def holding(self, pool: str, job: Job, sign: int) -> None:
        """Called as a job's part starts (+1) or stops (−1) holding its room in a node pool (exact integrals)."""

    # -- admission ---------------------------------------------------------------------------------------------
    def state(self, pool: str) -> PoolState:
        min_runtime, now, known = self.min_runtime[pool], self.now, self.known[pool]
        running = tuple(
            RunningWorkflow(
                j.id,
                j.project if j.project in known else NO_PROJECT,
                j.usage[pool],
                j.preemptible[pool],
                min_runtime if j.started is None else now - j.started,
            )
            for j in self.running[pool].values()
        )
        queued = tuple(
            QueuedWorkflow(
                j.id, j.project if j.project in known else NO_PROJECT, j.usage[pool], float(j.submitted), j.priority
            )
            for j in self.queued[pool].values()
        )
        none = any(w.project == NO_PROJECT for w in running) or any(w.project == NO_PROJECT for w in queued)
        return PoolState(
            pool,
            Resources(gpu=self.capacity[pool]),
            self.with_none[pool] if none else self.trees[pool],
            running,
            queued,
            min_runtime_seconds=min_runtime,
        )

    def admit(self, pool: str, *, periodic: bool = False) -> None:
        """Passes until nothing is preempted; a periodic one skips a node pool with nothing new (as pass_all)."""
        if self.skip_idle and not self.queued[pool]:
            return
        for _ in range(ROUNDS):
            state = self.state(pool)
            fingerprint = state_fingerprint(state) if periodic else None
            if periodic and self.quiet.get(pool) == fingerprint:
                self.skipped += 1
                return
            result = run_admission(state)
            self.passes += 1
            if self.check:
                self.check(state, result)
            changed = result.admitted or result.preempted
            # the digest only when a periodic pass may read it: a pass that changed nothing
            self.quiet[pool] = None if changed else fingerprint if periodic else state_fingerprint(state)
            for victim in result.preempted:
                self.preempt(self.running[pool][victim.workflow])
            for admission in result.admitted:
                self.admit_part(pool, self.queued[pool][admission.workflow], admission.preemptible)
            if not result.preempted:
                return

    def admit_part(self, pool: str, job: Job, preemptible: bool) -> None:
        del self.queued[pool][job.id]
        job.preemptible[pool] = preemptible
        self.running[pool][job.id] = job
        self.holding(pool, job, 1)
        if not any(job.id in self.queued[p] for p in job.parts):
            self.start(job)

    def start(self, job: Job) -> None:
        """Its last part admitted: the job runs (a subclass may note the wait first)."""
        if job.first_started is None:
            job.first_started = self.now
        job.started = self.now
        job.version += 1
        self.push(self.now + job.duration, "completion", (job, job.version))

    def preempt(self, job: Job) -> None:
        """Stopped as a whole: its work is lost and every part is queued again with its submission time."""
        for pool in job.parts:
            if self.running[pool].pop(job.id, None) is not None:
                self.holding(pool, job, -1)
        if job.started is not None:
            self.account(job, self.now - job.started, lost=True)
        self.row(job.project).preempted += 1
        job.started = None
        job.preemptions += 1
        job.version += 1
        for pool in job.parts:
            self.queued[pool][job.id] = job  # RESCHEDULE: queued again with its submission time
