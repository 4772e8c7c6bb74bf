"""One admission pass for one node pool: admit or hold every queued workflow, with reasons, and choose the
preemptions that make room for guaranteed work. Pure: same inputs, same answer (docs/admission.md).

Units as in pools.engine.quota_model (gpu count, cpu millicores, memory bytes). A workflow's demand and
usage are summed over its tasks.

The pass:
1. Fair shares per resource (pools.engine.fairshare) with each project's request = what its running
   workflows use + what its queued workflows ask for. They stay fixed during the pass.
2. Queue order: project priority (higher first), workflow priority (HIGH, NORMAL, LOW), submission time,
   id. A workflow that cannot be admitted does not block those behind it.
3. Entitled phase, in that order (all DESERVED work first, then DEPARTMENT work), over workflows entitled
   to reclaim (pools.engine.reclaim), and within the limits: DESERVED — the project stays within its
   deserved quota in every resource it asks for (and its department's non-preemptible work within the
   department's); DEPARTMENT (over-quota on) — the department
   stays within its deserved quota and the project within its fair share:
   - fits in free capacity → admitted, non-preemptible (DESERVED) or preemptible (DEPARTMENT: above the
     project's own guarantee, a sibling within its deserved may take it back);
   - else reclaim with that strategy: if enough can be stopped, those workflows are preempted, the free
     capacity is reserved for this one (nothing else takes it in this pass) and it waits RECLAIMING (scope
     project or department); a later pass admits it once its victims are gone;
   - else held: NO_CAPACITY, and its demand is kept out of reach of the over-quota phase (admitting
     over-quota work there would only have it reclaimed for this one later: churn).
4. Over-quota phase (the rest, same order): only if the node pool's over-quota switch is on; admitted,
   preemptible, if for every resource asked for `allocated + demand ≤ fair share` (fair shares are capped
   by limits) and it fits in the free capacity that entitled work does not wait for; if it does not fit,
   reclaim toward fair share (FAIR_SHARE: victims stay at or above their own fair share), RECLAIMING as above.
   Otherwise held, with the first failing check as the reason.
Hold codes, checked in this order per resource (gpu, cpu, memory): TOO_BIG (more than the node pool has),
LIMIT (project's or department's limit), NO_OVER_QUOTA (above deserved with over-quota off), FAIR_SHARE
(above the project's fair share), NO_CAPACITY (within quota, not enough free, nothing to reclaim),
RECLAIMING. Each reason carries its numbers and the workflow's 1-based position among the held workflows
of the node pool, in queue order.
Known limit: a department's limit counts its projects' over-quota use too, and reclaim does not free room
under it, so guaranteed work can wait on LIMIT (department) until that use ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pools.engine.errors import EngineError
from pools.engine.fairshare import SHRINK, FairShare, LazyFairShares
from pools.engine.quota_model import RESOURCES, ZERO, QuotaTree, Resources, TeamQuota, UsageHistory, derived
from pools.engine.quota_text import amount, amount_noun, noun
from pools.engine.reclaim import (
    DEPARTMENT,
    DESERVED,
    FAIR_SHARE,
    ReclaimContext,
    RunningWorkflow,
    Victim,
    choose_victims,
)

PRIORITY_RANK = {"HIGH": 0, "NORMAL": 1, "LOW": 2}


@dataclass(frozen=True, slots=True)
class QueuedWorkflow:
    """A workflow waiting for admission. `submitted`: any sortable submission key (e.g. epoch seconds)."""

    id: str
    project: str
    demand: Resources
    submitted: float = 0.0
    priority: str = "NORMAL"


@dataclass(frozen=True)
class PoolState:
    """Everything one pass reads. `gpu_noun` names the node pool's GPUs in reasons ("A100 GPUs")."""

    name: str
    capacity: Resources
    tree: QuotaTree
    running: tuple[RunningWorkflow, ...] = ()
    queued: tuple[QueuedWorkflow, ...] = ()
    over_quota: bool = True
    min_runtime_seconds: int = 0
    gpu_noun: str = "GPUs"
    guarantee_rule: str = SHRINK  # capacity below the guarantees (pools.engine.fairshare): SHRINK or KAI
    history: UsageHistory | None = None  # past usage: time-based fair share (pools.engine.fairshare); None: off
    totals: RunningTotals | None = None  # the sums of `running`, kept by the caller (the replay); None: summed here


@dataclass(frozen=True)
class RunningTotals:
    """What `running` uses per project and per department, and per department its non-preemptible part: what a
    pass sums first. A caller that keeps them as work starts and stops (pools.engine.admission_loop) hands them
    over and the pass skips the sum; they must be the sums of `running` (a project or department that holds
    nothing may be left out or be zero)."""

    projects: Mapping[str, Resources]
    departments: Mapping[str, Resources]
    non_preemptible: Mapping[str, Resources]


@dataclass(frozen=True, slots=True)
class Admission:
    workflow: str
    project: str
    preemptible: bool


@dataclass(frozen=True, slots=True)
class HoldReason:
    """Why a workflow waits: `code`, the `scope` (project, department or node_pool) and its `team`, the
    `resource` and the numbers behind it, its `position` in the queue, and the rendered `text`."""

    code: str
    scope: str
    team: str
    resource: str
    demand: int
    allocated: int
    deserved: int
    fair_share: int
    limit: int | None
    free: int
    borrowable: int
    position: int
    text: str
    victims: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "text": self.text,
            "scope": self.scope,
            "team": self.team,
            "resource": self.resource,
            "demand": self.demand,
            "allocated": self.allocated,
            "deserved": self.deserved,
            "fair_share": self.fair_share,
            "limit": self.limit,
            "free": self.free,
            "borrowable": self.borrowable,
            "position": self.position,
            "victims": list(self.victims),
        }


@dataclass(frozen=True, slots=True)
class Hold:
    workflow: str
    project: str
    reason: HoldReason


@dataclass(frozen=True)
class PassResult:
    """The decisions of one pass. `allocated_before`: per project, what its running workflows use;
    `allocated_after`: once the decisions apply (+ admitted, + reserved for RECLAIMING, − victims)."""

    node_pool: str
    capacity: Resources
    over_quota: bool
    tree: QuotaTree
    shares: Mapping[str, FairShare]
    admitted: tuple[Admission, ...]
    held: tuple[Hold, ...]
    preempted: tuple[Victim, ...]
    allocated_before: Mapping[str, Resources]
    allocated_after: Mapping[str, Resources]
    gpu_noun: str = "GPUs"
    _by_id: dict = field(default_factory=dict, repr=False, compare=False)

    def decision(self, workflow_id: str) -> Admission | Hold | None:
        if not self._by_id:
            self._by_id.update({a.workflow: a for a in self.admitted})
            self._by_id.update({h.workflow: h for h in self.held})
        return self._by_id.get(workflow_id)


def queue_order(workflow: QueuedWorkflow, project_priority: int) -> tuple:
    return (-project_priority, PRIORITY_RANK.get(workflow.priority, 1), workflow.submitted, workflow.id)


class _Pass:
    """The mutable bookkeeping of one pass (free capacity, allocations); `run_admission` drives it.
    Only the teams some workflow belongs to are looked at: a node pool's idle teams cost nothing."""

    def __init__(self, state: PoolState) -> None:
        index = derived(state.tree, "pass", _PassIndex)  # checks the tree (raises on a bad one)
        self.state = state
        self.projects = index.projects
        self.departments = index.departments
        self.department_of = index.department_of
        self.allocated: dict[str, Resources] = {}
        self.department_allocated: dict[str, Resources] = {}
        self.non_preemptible: dict[str, Resources] = {}  # per department: what may not be reclaimed
        if state.totals is None:
            self._charge_running(state.running)
        else:
            self.allocated = dict(state.totals.projects)
            self.department_allocated = dict(state.totals.departments)
            self.non_preemptible = dict(state.totals.non_preemptible)
        self.before = {name: self.allocated.get(name, ZERO) for name in self.projects}
        requests = dict(self.allocated)
        for workflow in state.queued:
            requests[workflow.project] = requests.get(workflow.project, ZERO) + workflow.demand
        self.shares = LazyFairShares(  # divided when first read: most passes read none
            state.capacity,
            state.tree,
            requests,
            over_quota=state.over_quota,
            rule=state.guarantee_rule,
            history=state.history,
        )
        used = ZERO
        for usage in self.allocated.values():
            used = used + usage
        self.free = (state.capacity - used).clamp()
        self.deserved = {name: index.deserved[name] for name in requests}
        self.department_deserved = index.department_deserved
        self.admitted: list[Admission] = []
        self.pending: list[tuple[QueuedWorkflow, dict]] = []  # (workflow, reason fields) until positions are known
        self.victims: list[Victim] = []
        self.victim_ids: set[str] = set()
        self.reserved = ZERO  # free room kept for guaranteed work that waits (NO_CAPACITY)

    def _charge_running(self, running: tuple[RunningWorkflow, ...]) -> None:
        """`charge` of every running workflow, summed in plain ints first (a pass over hundreds of running
        workflows builds one Resources per team, not two per workflow); the same totals, in the same order."""
        sums: dict[str, list[int]] = {}
        locked: dict[str, list[int]] = {}  # per department, its non-preemptible usage
        for workflow in running:
            usage = workflow.usage
            total = sums.get(workflow.project)
            if total is None:
                total = sums[workflow.project] = [0, 0, 0]
            total[0] += usage.gpu
            total[1] += usage.cpu
            total[2] += usage.memory
            if not workflow.preemptible:
                department = self.department_of[workflow.project]
                kept = locked.get(department)
                if kept is None:
                    kept = locked[department] = [0, 0, 0]
                kept[0] += usage.gpu
                kept[1] += usage.cpu
                kept[2] += usage.memory
        departments: dict[str, list[int]] = {}
        for project, total in sums.items():
            self.allocated[project] = Resources(*total)
            department = self.department_of[project]
            summed = departments.get(department)
            if summed is None:
                departments[department] = list(total)
            else:
                summed[0] += total[0]
                summed[1] += total[1]
                summed[2] += total[2]
        self.department_allocated = {name: Resources(*total) for name, total in departments.items()}
        self.non_preemptible = {name: Resources(*total) for name, total in locked.items()}

    # -- bookkeeping -------------------------------------------------------------------------------------------
    def charge(self, project: str, amount_: Resources, sign: int = 1) -> None:
        delta = amount_ if sign > 0 else ZERO - amount_
        self.allocated[project] = self.allocated.get(project, ZERO) + delta
        department = self.department_of[project]
        self.department_allocated[department] = self.department_allocated.get(department, ZERO) + delta

    def fair(self, project: str, resource: str) -> int:
        return self.shares[resource].projects[project].fair_share

    def hold(
        self, workflow: QueuedWorkflow, code: str, resource: str, scope: str = "project", room=None, **extra
    ) -> None:
        project = self.projects[workflow.project]
        team = project.department if scope == "department" else workflow.project
        quota = (self.departments[team] if scope == "department" else project).quota(resource)
        allocated = (self.department_allocated if scope == "department" else self.allocated).get(team, ZERO)
        allocated = allocated.get(resource)
        deserved, free = quota.deserved, (room or self.free).get(resource)
        fair = self.fair(workflow.project, resource)
        borrowable = max(0, min(free, fair - max(allocated, deserved))) if self.state.over_quota else 0
        fields = {
            "code": code,
            "scope": scope,
            "team": team,
            "resource": resource,
            "demand": workflow.demand.get(resource),
            "allocated": allocated,
            "deserved": deserved,
            "fair_share": fair,
            "limit": quota.limit,
            "free": free,
            "borrowable": borrowable,
            **extra,
        }
        self.pending.append((workflow, fields))

    # -- checks ------------------------------------------------------------------------------------------------
    def asked(self, workflow: QueuedWorkflow) -> list[str]:
        return [r for r in RESOURCES if workflow.demand.get(r) > 0]

    def entitlement(self, workflow: QueuedWorkflow) -> str | None:
        """DESERVED: the project stays within its deserved quota (and its department's non-preemptible work
        within the department's); DEPARTMENT: the department stays within its deserved quota and the project
        within its fair share; None: over-quota work (docs/admission.md, "Reclaim")."""
        asked = self.asked(workflow)
        department = self.department_of[workflow.project]
        after = self.allocated.get(workflow.project, ZERO) + workflow.demand
        deserved = self.deserved[workflow.project]
        department_deserved = self.department_deserved[department]
        if all(after.get(r) <= deserved.get(r) for r in asked):
            locked = self.non_preemptible.get(department, ZERO) + workflow.demand
            if all(locked.get(r) <= department_deserved.get(r) for r in asked):
                return DESERVED
        if not self.state.over_quota:
            return None
        department_after = self.department_allocated.get(department, ZERO) + workflow.demand
        if all(
            department_after.get(r) <= department_deserved.get(r) and after.get(r) <= self.fair(workflow.project, r)
            for r in asked
        ):
            return DEPARTMENT
        return None

    def quota_refusal(self, workflow: QueuedWorkflow, over_quota_phase: bool) -> tuple[str, str, str] | None:
        """The first failing check as (code, resource, scope), or None if quota allows it."""
        project = self.projects[workflow.project]
        department = self.departments[project.department]
        allocated = self.allocated.get(project.name, ZERO)
        for resource in self.asked(workflow):
            demand = workflow.demand.get(resource)
            if demand > self.state.capacity.get(resource):
                return "TOO_BIG", resource, "node_pool"
            limit = project.quota(resource).limit
            if limit is not None and allocated.get(resource) + demand > limit:
                return "LIMIT", resource, "project"
            limit = department.quota(resource).limit
            used = self.department_allocated.get(department.name, ZERO).get(resource)
            if limit is not None and used + demand > limit:
                return "LIMIT", resource, "department"
        if not over_quota_phase:
            return None
        for resource in self.asked(workflow):
            after = allocated.get(resource) + workflow.demand.get(resource)
            if not self.state.over_quota and after > project.quota(resource).deserved:
                return "NO_OVER_QUOTA", resource, "project"
            if self.state.over_quota and after > self.fair(project.name, resource):
                return "FAIR_SHARE", resource, "project"
        if not self.state.over_quota:  # within the project's deserved, but its department's is held
            return "NO_OVER_QUOTA", self.asked(workflow)[0], "department"
        return None

    def shortfall_resource(self, workflow: QueuedWorkflow, room: Resources | None = None) -> str:
        room = room or self.free
        return next(r for r in self.asked(workflow) if workflow.demand.get(r) > room.get(r))

    def reclaim(self, workflow: QueuedWorkflow, room: Resources, strategy: str) -> list[Victim] | None:
        need = (workflow.demand - room).clamp()
        candidates = [w for w in self.state.running if w.id not in self.victim_ids]
        if strategy != FAIR_SHARE:
            return self.victims_among(workflow, need, candidates, strategy)
        own = self.department_of[workflow.project]
        siblings = [w for w in candidates if w.preemptible and self.department_of.get(w.project) == own]
        if not self.department_within_fair_share(workflow, siblings):
            return None  # even stopping all its siblings' work would leave the department above its fair share
        victims = self.victims_among(workflow, need, candidates, strategy)
        if victims is None or self.department_within_fair_share(workflow, victims):
            return victims
        # taken from its own department, a borrower's room only moves between siblings and the department's total
        # stays: two borrowers of one department reclaim toward their fair shares (KAI's MaintainFairShare)
        victims = self.victims_among(workflow, need, siblings, strategy)
        return victims if victims is not None and self.department_within_fair_share(workflow, victims) else None

    def victims_among(self, workflow: QueuedWorkflow, need: Resources, candidates: list, strategy: str):
        context = ReclaimContext(
            self.state.capacity,
            self.shares,
            self.deserved,
            self.allocated,
            self.state.min_runtime_seconds,
            self.state.gpu_noun,
            strategy,
            self.department_of,
            self.department_deserved,
            self.department_allocated,
        )
        return choose_victims(need, workflow.id, workflow.project, candidates, context)

    def department_within_fair_share(self, workflow: QueuedWorkflow, victims: list) -> bool:
        """A FAIR_SHARE reclaim keeps the preemptor's department within its fair share once `victims` (Victims or
        RunningWorkflows) of that same department, other projects', are gone; the victims' side is checked per
        victim (pools.engine.reclaim)."""
        department = self.department_of[workflow.project]
        after = self.department_allocated.get(department, ZERO) + workflow.demand
        for victim in victims:
            if victim.project != workflow.project and self.department_of.get(victim.project) == department:
                after = after - victim.usage
        return all(after.get(r) <= self.shares[r].departments[department].fair_share for r in self.asked(workflow))

    # -- phases ------------------------------------------------------------------------------------------------
    def guaranteed(self, workflow: QueuedWorkflow, strategy: str) -> None:
        refusal = self.quota_refusal(workflow, over_quota_phase=False)
        scope = "project" if strategy == DESERVED else "department"
        if refusal:
            self.hold(workflow, refusal[0], refusal[1], refusal[2])
        elif workflow.demand.fits_in(self.free):
            self.admit(workflow, preemptible=strategy != DESERVED)
        else:
            victims = self.reclaim(workflow, self.free, strategy)
            if victims is None:
                self.hold(workflow, "NO_CAPACITY", self.shortfall_resource(workflow), scope)
                # over-quota work admitted into this room now would only be reclaimed for it later (churn)
                self.reserved = self.reserved + workflow.demand
            else:
                self.hold(workflow, "RECLAIMING", self.shortfall_resource(workflow), scope, victims=_ids(victims))
                self.take(workflow, victims)

    def over_quota(self, workflow: QueuedWorkflow) -> None:
        room = (self.free - self.reserved).clamp()
        refusal = self.quota_refusal(workflow, over_quota_phase=True)
        if refusal:
            self.hold(workflow, refusal[0], refusal[1], refusal[2], room=room)
        elif workflow.demand.fits_in(room):
            self.admit(workflow, preemptible=True)
        else:
            victims = self.reclaim(workflow, room, FAIR_SHARE)
            resource = self.shortfall_resource(workflow, room)
            if victims is None:
                self.hold(workflow, "NO_CAPACITY", resource, room=room)
            else:
                self.hold(workflow, "RECLAIMING", resource, room=room, victims=_ids(victims))
                self.take(workflow, victims)

    def take(self, workflow: QueuedWorkflow, victims: list[Victim]) -> None:
        """Stop the victims; their room is the preemptor's (reserved: not free until they are gone)."""
        for victim in victims:
            self.victims.append(victim)
            self.victim_ids.add(victim.workflow)
            self.charge(victim.project, victim.usage, sign=-1)
        self.charge(workflow.project, workflow.demand)
        self.free = (self.free - workflow.demand).clamp()

    def admit(self, workflow: QueuedWorkflow, *, preemptible: bool) -> None:
        self.admitted.append(Admission(workflow.id, workflow.project, preemptible))
        self.charge(workflow.project, workflow.demand)
        self.free = self.free - workflow.demand
        if not preemptible:
            department = self.department_of[workflow.project]
            self.non_preemptible[department] = self.non_preemptible.get(department, ZERO) + workflow.demand


class _PassIndex:
    """What every pass reads of a tree, derived once per tree (quota_model.derived); read-only."""

    def __init__(self, tree: QuotaTree) -> None:
        tree.check()
        self.projects = {p.name: p for p in tree.projects}
        self.departments = {d.name: d for d in tree.departments}
        self.department_of = {p.name: p.department for p in tree.projects}
        self.deserved = {name: _deserved(team) for name, team in self.projects.items()}
        self.department_deserved = {name: _deserved(team) for name, team in self.departments.items()}


def _deserved(team: TeamQuota) -> Resources:
    return Resources(*(team.quota(r).deserved for r in RESOURCES))


def _ids(victims: list[Victim]) -> tuple[str, ...]:
    return tuple(v.workflow for v in victims)


def state_fingerprint(state: PoolState) -> int:
    """A digest of everything a pass decides on, so a periodic pass can skip a node pool whose state has not
    changed since a pass that admitted and preempted nothing (it would decide the same again). Runtimes enter
    only as "past the minimum runtime or not": the ageing of running work changes nothing else a pass can act
    on. Past usage (time-based fair share) enters whole: it moves fair shares, so a node pool whose usage moves
    (work running, or a half-life) is passed every period. Stable within one process (Python's hash), which is
    where it is kept."""
    tree = state.tree
    teams = tuple(
        (t.name, t.department, t.priority, t.created, tuple(sorted(t.quotas.items())))
        for t in (*tree.departments, *tree.projects)
    )
    running = frozenset(
        (w.id, w.project, w.usage, w.preemptible, w.runtime_seconds >= state.min_runtime_seconds) for w in state.running
    )
    queued = frozenset((w.id, w.project, w.demand, w.submitted, w.priority) for w in state.queued)
    options = (
        state.name,
        state.capacity,
        state.over_quota,
        state.min_runtime_seconds,
        state.guarantee_rule,
        state.gpu_noun,
    )
    history = state.history and (
        state.history.k_milli,
        frozenset((r, team, share) for r, used in state.history.usage.items() for team, share in used.items()),
    )
    return hash((options, teams, running, queued, history))


def run_admission(state: PoolState) -> PassResult:
    """One admission pass (module docstring). Raises EngineError on a malformed quota tree; a queued or
    running workflow of a project that is not in the tree is an error too (the caller charges projects)."""
    known = derived(state.tree, "pass", _PassIndex).projects
    for workflow in (*state.queued, *state.running):
        if workflow.project not in known:
            raise EngineError(
                "project has no quota in this node pool",
                field=f"workflows.{workflow.id}.project",
                value=workflow.project,
            )
    run = _Pass(state)
    ordered = sorted(state.queued, key=lambda w: queue_order(w, run.projects[w.project].priority))
    later = []
    # a project's own guarantee first, then its department's: room reclaimed for a project's deserved quota
    # is not taken by department-entitled work of a higher-ranked project in the next pass (a livelock)
    for workflow in ordered:
        if run.entitlement(workflow) == DESERVED:
            run.guaranteed(workflow, DESERVED)
        else:
            later.append(workflow)
    rest = []
    for workflow in later:
        strategy = run.entitlement(workflow)
        if strategy:
            run.guaranteed(workflow, strategy)
        else:
            rest.append(workflow)
    for workflow in rest:
        run.over_quota(workflow)
    return _result(run, ordered)


def _result(run: _Pass, ordered: list[QueuedWorkflow]) -> PassResult:
    state = run.state
    rank = {w.id: i for i, w in enumerate(ordered)}
    pending = sorted(run.pending, key=lambda item: rank[item[0].id])
    held = []
    for position, (workflow, fields) in enumerate(pending, start=1):
        fields["position"] = position
        text = hold_text(fields, workflow, state)
        held.append(Hold(workflow.id, workflow.project, HoldReason(**fields, text=text)))
    return PassResult(
        node_pool=state.name,
        capacity=state.capacity,
        over_quota=state.over_quota,
        tree=state.tree,
        shares=run.shares,
        admitted=tuple(run.admitted),
        held=tuple(held),
        preempted=tuple(run.victims),
        allocated_before=run.before,
        allocated_after={name: run.allocated.get(name, ZERO) for name in run.projects},
        gpu_noun=state.gpu_noun,
    )


def hold_text(fields: Mapping, workflow: QueuedWorkflow, state: PoolState) -> str:
    """The sentence a researcher reads, e.g. "project vision: 16 of 16 guaranteed A100 GPUs in use;
    0 free to borrow; position 3 in the queue"."""
    r, gpu = fields["resource"], state.gpu_noun
    what = noun(r, gpu)
    team = f"{fields['scope'] if fields['scope'] != 'node_pool' else 'node pool'} {fields['team']}"
    used = (
        f"{amount(r, fields['allocated'])} of {amount(r, fields['deserved'])} guaranteed {what} in use"
        if fields["allocated"] <= fields["deserved"]
        else f"{amount(r, fields['allocated'])} {what} in use, {amount(r, fields['deserved'])} guaranteed"
    )
    code = fields["code"]
    if code == "TOO_BIG":
        head = (
            f"node pool {state.name}: asks for {amount_noun(r, fields['demand'], gpu)}, "
            f"more than the node pool's {amount_noun(r, state.capacity.get(r), gpu)}"
        )
    elif code == "LIMIT":
        head = (
            f"{team}: limit of {amount_noun(r, fields['limit'], gpu)} reached "
            f"({amount(r, fields['allocated'])} in use, this workflow asks for {amount(r, fields['demand'])})"
        )
    elif code == "NO_OVER_QUOTA":
        head = f"{team}: {used}; over-quota is off in node pool {state.name}"
    elif code == "RECLAIMING":
        freed = amount_noun(r, fields["demand"] - fields["free"], gpu)
        head = (
            f"{team}: within its guaranteed quota ({used}); preempting {len(fields['victims'])} over-quota "
            f"workflow(s) of other projects to free {freed}"
            if fields["allocated"] + fields["demand"] <= fields["deserved"]
            else f"{team}: {used}; within its fair share of {amount(r, fields['fair_share'])}: preempting "
            f"{len(fields['victims'])} workflow(s) of projects above their fair share to free {freed}"
        )
    elif code == "FAIR_SHARE" or fields["allocated"] + fields["demand"] > fields["deserved"]:
        head = f"{team}: {used}; {amount(r, fields['borrowable'])} free to borrow"
    else:  # NO_CAPACITY
        head = (
            f"{team}: {used}; asks for {amount(r, fields['demand'])}, "
            f"{amount(r, fields['free'])} free in node pool {state.name}"
        )
    return f"{head}; position {fields['position']} in the queue"
