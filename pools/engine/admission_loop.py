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

from pools.engine.fairshare import fair_share_index
from pools.engine.quota_model import NO_PROJECT, RESOURCES, ZERO, QuotaTree, Resources, with_no_project
from pools.engine.quota_pass import (
    PassResult,
    PoolState,
    QueuedWorkflow,
    RunningTotals,
    run_admission,
)
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
        # node pool → until when its last pass that changed nothing stays valid (None: something changed since)
        self.quiet: dict[str, float | None] = {}
        # kept as parts start and stop, not summed per pass (`tally`, `running_totals`): per node pool, what is
        # held per project (as the pass names it) and per department, per department its non-preemptible part,
        # and how many parts each of those sums counts
        self.team_department = {pool: {p.name: p.department for p in t.projects} for pool, t in self.with_none.items()}
        self.totals: dict[str, tuple[dict, dict, dict, dict]] = {pool: ({}, {}, {}, {}) for pool in self.capacity}
        self.used = dict.fromkeys(self.capacity, ZERO)  # per node pool, the sum of what its running parts hold
        # (node pool, with the team (none)) → what `sure_admission` reads of that tree, derived at its first pass
        self.sure: dict[tuple[str, bool], SurePass] = {}
        # per node pool, in `running`'s order, what a pass sees of each running part but its runtime
        self.seen: dict[str, dict[str, tuple]] = {pool: {} for pool in self.capacity}

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
            self.quiet[pool] = None
        for pool in job.parts:
            self.admit(pool)

    def completion(self, payload) -> None:
        job, version = payload
        if job.version != version or job.started is None:
            return
        for pool in job.parts:
            del self.running[pool][job.id]
            self.tally(pool, job, -1)
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

    def tally(self, pool: str, job: Job, sign: int) -> None:
        """A part starts (+1) or stops (−1) holding its room: the node pool's running totals follow."""
        project = job.project if job.project in self.known[pool] else NO_PROJECT
        department = self.team_department[pool][project]
        usage = job.usage[pool]
        self.quiet[pool] = None
        if sign > 0:
            self.seen[pool][job.id] = (job, job.id, project, usage, job.preemptible[pool])
        else:
            del self.seen[pool][job.id]
        self.used[pool] = self.used[pool] + usage if sign > 0 else self.used[pool] - usage
        projects, departments, locked, parts = self.totals[pool]
        _count(projects, parts, 0, project, usage, sign)
        _count(departments, parts, 1, department, usage, sign)
        if not job.preemptible[pool]:
            _count(locked, parts, 2, department, usage, sign)

    # -- admission ---------------------------------------------------------------------------------------------
    def running_totals(self, pool: str) -> RunningTotals:
        projects, departments, locked, _ = self.totals[pool]
        return RunningTotals(dict(projects), dict(departments), dict(locked))

    def state(self, pool: str) -> PoolState:
        min_runtime, now, known = self.min_runtime[pool], self.now, self.known[pool]
        running = tuple(
            [
                RunningWorkflow(i, project, usage, preemptible, min_runtime if j.started is None else now - j.started)
                for j, i, project, usage, preemptible in self.seen[pool].values()
            ]
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
            totals=self.running_totals(pool),
        )

    def admit(self, pool: str, *, periodic: bool = False) -> None:
        """Passes until nothing is preempted; a periodic one skips a node pool with nothing new (as pass_all)."""
        if self.skip_idle and not self.queued[pool]:
            return
        for _ in range(ROUNDS):
            quiet = self.quiet.get(pool)
            if periodic and quiet is not None and self.now < quiet:
                self.skipped += 1
                return
            sure = self.sure_admission(pool)
            if sure is not None and not self.check:  # the pass's one decision, known without the pass
                self.passes += 1
                self.quiet[pool] = None
                self.admit_part(pool, *sure)
                return
            state = self.state(pool)
            result = run_admission(state)
            self.passes += 1
            if self.check:
                self.check(state, result)
                _same_decision(sure, result)
            changed = result.admitted or result.preempted
            self.quiet[pool] = None if changed else self.quiet_until(pool)
            for victim in result.preempted:
                self.preempt(self.running[pool][victim.workflow])
            for admission in result.admitted:
                self.admit_part(pool, self.queued[pool][admission.workflow], admission.preemptible)
            if not result.preempted:
                return

    def sure_admission(self, pool: str) -> tuple[Job, bool] | None:
        """The pass's decision when it is sure without running it (most passes of a replay: one job arrives and
        fits), as (the job, preemptible); None: the pass must run. One queued part that fits in the free room,
        in a tree where the resources it asks for have no limit, no weight 0 and no never-lending quota
        (`SurePass`): the pass admits it — non-preemptible if its project and its department's non-preemptible
        work stay within their deserved quota (entitled DESERVED), else preemptible (entitled DEPARTMENT, or
        over quota), as then every fair share is at least what its project asks: everything asked fits in the
        node pool, so each department and each project is given all it asks (pools.engine.fairshare, "room for
        everything"), and `allocated + demand` is at most what the project asks. Checked against the pass
        itself on every pass run with a `check` (`_same_decision`), as the property tests do."""
        queued = self.queued[pool]
        if len(queued) != 1:
            return None
        (job,) = queued.values()
        demand, used = job.usage[pool], self.used[pool]
        free = self.capacity[pool] - used.gpu  # the pass's free room: capacity − used, no part below 0
        if demand.gpu > free or demand.cpu > max(0, -used.cpu) or demand.memory > max(0, -used.memory):
            return None
        projects, _, locked, _ = self.totals[pool]
        project = job.project if job.project in self.known[pool] else NO_PROJECT
        none = project == NO_PROJECT or NO_PROJECT in projects
        index = self.sure.get((pool, none))
        if index is None:
            index = self.sure[pool, none] = SurePass(self.with_none[pool] if none else self.trees[pool])
        asked = [r for r in RESOURCES if demand.get(r) > 0]
        if any(r not in index.plain for r in asked):
            return None
        after, deserved = projects.get(project, ZERO) + demand, index.deserved[project]
        department = index.department_of[project]
        kept, department_deserved = locked.get(department, ZERO) + demand, index.department_deserved[department]
        entitled = all(after.get(r) <= deserved.get(r) and kept.get(r) <= department_deserved.get(r) for r in asked)
        return job, not entitled

    def quiet_until(self, pool: str) -> float:
        """After a pass that changed nothing, until when a pass would see the same state (pools.engine.quota_pass
        `state_fingerprint`: runtimes count only as past the minimum or not) and decide the same: the first
        running part to pass its minimum runtime, unless something is queued, starts or stops first (each sets
        `quiet` to None). Kept by events, so a periodic pass neither builds the state nor digests it to know."""
        min_runtime, now = self.min_runtime[pool], self.now
        young = [j.started + min_runtime for j in self.running[pool].values() if j.started is not None]
        return min((at for at in young if at > now), default=math.inf)

    def admit_part(self, pool: str, job: Job, preemptible: bool) -> None:
        del self.queued[pool][job.id]
        job.preemptible[pool] = preemptible
        self.running[pool][job.id] = job
        self.tally(pool, job, 1)
        self.holding(pool, job, 1)
        if not any(job.id in self.queued[p] for p in job.parts):
            self.start(job)

    def start(self, job: Job) -> None:
        """Its last part admitted: the job runs (a subclass may note the wait first)."""
        if job.first_started is None:
            job.first_started = self.now
        for pool in job.parts:  # its reserved parts now run from zero: below the minimum runtime again
            self.quiet[pool] = None
        job.started = self.now
        job.version += 1
        self.push(self.now + job.duration, "completion", (job, job.version))

    def preempt(self, job: Job) -> None:
        """Stopped as a whole: its work is lost and every part is queued again with its submission time."""
        for pool in job.parts:
            if self.running[pool].pop(job.id, None) is not None:
                self.tally(pool, job, -1)
                self.holding(pool, job, -1)
        if job.started is not None:
            self.account(job, self.now - job.started, lost=True)
        self.row(job.project).preempted += 1
        job.started = None
        job.preemptions += 1
        job.version += 1
        for pool in job.parts:
            self.queued[pool][job.id] = job  # RESCHEDULE: queued again with its submission time
            self.quiet[pool] = None


class SurePass:
    """What `AdmissionLoop.sure_admission` reads of a tree, derived once per tree: each team's deserved quota, and
    the resources that no team limits, weighs 0 or never lends (there a pass with room for everything asked gives
    each project all it asks)."""

    def __init__(self, tree: QuotaTree) -> None:
        tree.check()  # a malformed tree is refused at the first pass, as the pass refuses it
        teams = (*tree.departments, *tree.projects)
        self.deserved = {p.name: Resources(*(p.quota(r).deserved for r in RESOURCES)) for p in tree.projects}
        self.department_deserved = {
            d.name: Resources(*(d.quota(r).deserved for r in RESOURCES)) for d in tree.departments
        }
        self.department_of = {p.name: p.department for p in tree.projects}
        idle = fair_share_index(tree).idle
        self.plain = {r for r in idle if all(t.quota(r).limit is None and t.quota(r).weight > 0 for t in teams)}


def _count(sums: dict, parts: dict, kind: int, name: str, usage: Resources, sign: int) -> None:
    """One part more (sign +1) or less (−1) in `sums[name]`; a name nothing runs for any more is left out, as a
    sum over `running` leaves it. `parts` counts the parts of each sum, keyed by (kind, name)."""
    key = (kind, name)
    count = parts[key] = parts.get(key, 0) + sign
    if not count:
        del parts[key], sums[name]
    else:
        sums[name] = sums.get(name, ZERO) + usage if sign > 0 else sums[name] - usage


def _same_decision(sure: tuple[Job, bool] | None, result: PassResult) -> None:
    """A pass run with a `check`: the decision `sure_admission` took for it, if any, is the pass's."""
    if sure is None:
        return
    job, preemptible = sure
    decided = [(admission.workflow, admission.preemptible) for admission in result.admitted]
    if decided != [(job.id, preemptible)] or result.held or result.preempted:
        raise AssertionError(f"sure admission of {job.id} (preemptible {preemptible}) is not the pass's: {result}")
