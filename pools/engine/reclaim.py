"""Reclaim: which running workflows to stop so that queued work gets what the quotas promise it.

Called by the admission pass (pools.engine.quota_pass) for a queued workflow that does not fit in the node
pool's free capacity. Units as in pools.engine.quota_model. Three strategies, after KAI-Scheduler's reclaim
(quota-reference.md §1.2); which one applies is the admission pass's choice (docs/admission.md, "Reclaim"):

* `DESERVED` (KAI's GuaranteeDeservedQuota, project level): the preemptor's project stays within its deserved
  quota. Victims: preemptible workflows of other projects above their deserved quota (in a needed resource,
  before each pick) — in another department only if that department is above its deserved quota too (the
  rule applies at the level where the two meet, as in KAI's queue tree).
* `DEPARTMENT` (the same rule one level up, as KAI's queue tree applies it): the preemptor's department stays
  within its deserved quota — including deserved it has not split among its projects — and the project within
  its fair share. Victims: preemptible workflows of projects of *other* departments where both the project and
  its department are above their deserved quota (before each pick).
* `FAIR_SHARE` (KAI's MaintainFairShare): the preemptor's project stays within its fair share (checked by the
  pass). Victims: preemptible workflows of other projects that stay at or above `max(fair share, deserved)`
  after the eviction in every needed resource they use; across departments the victim's department must stay
  at or above its own too, and the preemptor's department within its fair share once the victims of its own
  department are gone (between siblings the room only moves: the admission pass checks it).

Common to all: only preemptible workflows (admitted above deserved), of another project, that have run at
least `min_runtime_seconds` and use a resource still needed. A workflow is stopped as a whole (gang: its tasks
only make progress together, so stopping one task frees its room but wastes the whole workflow's work).

Which victims (`choose_victims`): the cheapest of three sets by GPU-hours lost (usage × runtime; CPU and
memory, as fractions of the node pool, only break ties) — exact minimum cover is a knapsack, these three are
cheap and between them never worse than the youngest-first rule they replace:
1. greedy by the smallest cost per unit of the need a workflow still covers (exact fractions);
2. greedy youngest first;
   in both, ties go to the project furthest above its fair share, then id; a victim's project (and
   department) allocation drops at once, so eligibility is re-read for the next pick; then, most expensive
   first, every victim the others cover without is dropped (just enough);
3. the cheapest single eligible workflow that covers the need alone.
Not enough candidates → None: nothing is stopped (no partial reclaim).

Why none of this oscillates: a `DESERVED` preemptor is admitted non-preemptible, so it is never a victim. A
`DEPARTMENT` or `FAIR_SHARE` preemptor ends within its project's fair share, while a `FAIR_SHARE` victim can
only be taken from a project that stays at or above its fair share: with the fair shares of the pass, the
victim's project coming back would need `allocated + demand ≤ fair share` while it already holds at least its
fair share, and a project at or above deserved cannot reclaim as `DESERVED`. `DEPARTMENT` victims sit in a
department above its deserved quota, which cannot reclaim as `DEPARTMENT` until it is back below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from pools.engine.fairshare import FairShare
from pools.engine.quota_model import RESOURCES, ZERO, Resources
from pools.engine.quota_text import amount_noun


@dataclass(frozen=True, slots=True)
class RunningWorkflow:
    """An admitted workflow. `usage` in quota units; `runtime_seconds` since it was admitted (youngest =
    smallest); `preemptible` = admitted above its project's deserved quota."""

    id: str
    project: str
    usage: Resources
    preemptible: bool
    runtime_seconds: int = 0


@dataclass(frozen=True, slots=True)
class Victim:
    """A workflow to preempt, the workflow it makes room for, and why (`reason`: structured; `text`)."""

    workflow: str
    project: str
    usage: Resources
    preemptor: str
    preemptor_project: str
    reason: Mapping[str, object]

    @property
    def text(self) -> str:
        return str(self.reason["text"])


DESERVED, DEPARTMENT, FAIR_SHARE = "deserved", "department", "fair_share"
STRATEGIES = (DESERVED, DEPARTMENT, FAIR_SHARE)


@dataclass(frozen=True, slots=True)
class ReclaimContext:
    """What the victim choice reads: capacity, fair shares per resource, each project's deserved quotas and
    current allocation (the admission pass keeps the allocation up to date as it decides), and for the
    department-aware strategies each project's department and the departments' deserved and allocation."""

    capacity: Resources
    shares: Mapping[str, FairShare]
    deserved: Mapping[str, Resources]
    allocated: Mapping[str, Resources]
    min_runtime_seconds: int = 0
    gpu_noun: str = "GPUs"
    strategy: str = DESERVED
    department_of: Mapping[str, str] = field(default_factory=dict)
    department_deserved: Mapping[str, Resources] = field(default_factory=dict)
    department_allocated: Mapping[str, Resources] = field(default_factory=dict)

    def fair(self, team: str, resource: str, *, department: bool = False) -> int:
        shares = self.shares[resource].departments if department else self.shares[resource].projects
        share = shares.get(team)
        return share.fair_share if share else 0


def _needed(need: Resources) -> list[str]:
    return [r for r in RESOURCES if need.get(r) > 0]


def _excess(project: str, needed: list[str], context: ReclaimContext, allocated: Resources) -> Fraction:
    """How far the project is above its fair share, in the needed resource where that is largest,
    as a fraction of the node pool's capacity (so GPUs and bytes compare)."""
    return max(Fraction(allocated.get(r) - context.fair(project, r), max(1, context.capacity.get(r))) for r in needed)


def _above(allocated: Resources, deserved: Resources, needed: list[str]) -> bool:
    return any(allocated.get(r) > deserved.get(r) for r in needed)


class _Ledger:
    """The allocations as victims are picked: per project and per department."""

    def __init__(self, context: ReclaimContext, projects: set[str]) -> None:
        self.context = context
        self.project = {p: context.allocated.get(p, ZERO) for p in projects}
        departments = {context.department_of.get(p) for p in projects}
        self.department = {d: context.department_allocated.get(d, ZERO) for d in departments if d is not None}

    def take(self, workflow: RunningWorkflow) -> None:
        self.project[workflow.project] = self.project[workflow.project] - workflow.usage
        department = self.context.department_of.get(workflow.project)
        if department in self.department:
            self.department[department] = self.department[department] - workflow.usage

    def allows(self, workflow: RunningWorkflow, preemptor_project: str, needed: list[str], *, keep_fair=False) -> bool:
        """May `workflow` be taken now, under the context's strategy (module docstring)? `keep_fair`: only if its
        project (and department) also stays at or above its fair share, as FAIR_SHARE asks."""
        context, project = self.context, workflow.project
        department = context.department_of.get(project)
        other_department = department != context.department_of.get(preemptor_project)
        if context.strategy == DESERVED:  # across departments, as KAI's tree: only from one above its own
            allowed = _above(self.project[project], context.deserved.get(project, ZERO), needed) and (
                not other_department
                or _above(self.department[department], context.department_deserved.get(department, ZERO), needed)
            )
            return allowed and (not keep_fair or self.stays_fair(workflow, needed, other_department))
        if context.strategy == DEPARTMENT:
            allowed = (
                other_department
                and _above(self.project[project], context.deserved.get(project, ZERO), needed)
                and _above(self.department[department], context.department_deserved.get(department, ZERO), needed)
            )
            return allowed and (not keep_fair or self.stays_fair(workflow, needed, other_department))
        return self.stays_fair(workflow, needed, other_department)

    def stays_fair(self, workflow: RunningWorkflow, needed: list[str], other_department: bool) -> bool:
        """The victim's project stays at or above max(fair share, deserved) without it (its department too)."""
        context, project = self.context, workflow.project
        department = context.department_of.get(project)
        for resource in needed:
            usage = workflow.usage.get(resource)
            if not usage:
                continue
            floor = max(context.fair(project, resource), context.deserved.get(project, ZERO).get(resource))
            if self.project[project].get(resource) - usage < floor:
                return False
            if other_department:
                floor = max(
                    context.fair(department, resource, department=True),
                    context.department_deserved.get(department, ZERO).get(resource),
                )
                if self.department[department].get(resource) - usage < floor:
                    return False
        return True


def gpu_hours_lost(workflow: RunningWorkflow, capacity: Resources) -> tuple[int, Fraction]:
    """The cost of stopping a workflow: GPU-seconds of work lost, then CPU and memory as node-pool fractions."""
    if not (workflow.usage.cpu or workflow.usage.memory):  # GPUs alone (a replay's work): no fractions to add
        return workflow.usage.gpu * workflow.runtime_seconds, Fraction(0)
    rest = sum((Fraction(workflow.usage.get(r), max(1, capacity.get(r))) for r in RESOURCES if r != "gpu"), Fraction(0))
    return workflow.usage.gpu * workflow.runtime_seconds, rest * workflow.runtime_seconds


def _covered(workflow: RunningWorkflow, need: Resources, freed: Resources) -> Fraction:
    """The part of the need still open that this workflow covers, summed over the needed resources."""
    return sum(
        (
            Fraction(min(workflow.usage.get(r), need.get(r) - freed.get(r)), need.get(r))
            for r in _needed(need)
            if need.get(r) > freed.get(r)
        ),
        Fraction(0),
    )


def _covers(victims: Sequence[RunningWorkflow], need: Resources) -> bool:
    freed = ZERO
    for victim in victims:
        freed = freed + victim.usage
    return need.fits_in(freed)


def _total_cost(victims: Sequence[RunningWorkflow], cost: Mapping[str, tuple[int, Fraction]]) -> tuple:
    return sum(cost[v.id][0] for v in victims), sum((cost[v.id][1] for v in victims), Fraction(0))


def choose_victims(
    need: Resources,
    preemptor: str,
    preemptor_project: str,
    running: Sequence[RunningWorkflow],
    context: ReclaimContext,
) -> list[Victim] | None:
    """Running workflows to stop so that `need` (the shortfall, per resource) is freed; None if impossible.

    `running` may include workflows already chosen in this pass: the caller leaves those out."""
    needed = _needed(need)
    if not needed:
        return []
    candidates = [
        w
        for w in running
        if w.preemptible
        and w.project != preemptor_project
        and w.runtime_seconds >= context.min_runtime_seconds
        and any(w.usage.get(r) > 0 for r in needed)
    ]
    # a pick only lowers allocations, so a workflow the strategy does not allow now is never allowed later: if all
    # those allowed now cannot free the need together, no set can (the usual reclaim that fails, found at once)
    ledger = _Ledger(context, {w.project for w in candidates})
    if not _covers([w for w in candidates if ledger.allows(w, preemptor_project, needed)], need):
        return None
    cost = {w.id: gpu_hours_lost(w, context.capacity) for w in candidates}
    found: list[list[RunningWorkflow]] = []
    # victims whose projects keep their fair share first (KAI takes from the most over-served first); only if
    # those cannot free the need, any victim the strategy allows
    for keep_fair in (True, False) if context.strategy != FAIR_SHARE else (False,):
        picks = _Picks(need, preemptor_project, needed, context, candidates, cost, keep_fair)
        sets = [
            picks.greedy(lambda w, useful: (Fraction(cost[w.id][0]) / useful, cost[w.id][1] / useful)),
            picks.greedy(lambda w, useful: (w.runtime_seconds,)),  # youngest first: never worse than it
            picks.alone(),
        ]
        found = [chosen for chosen in sets if chosen]
        if found:
            break
    if not found:
        return None
    chosen = min(found, key=lambda c: (_total_cost(c, cost), len(c), [w.id for w in c]))
    return [_victim(w, preemptor, preemptor_project, needed, context) for w in chosen]


class _Picks:
    """The ways `choose_victims` builds a victim set from the candidates; each returns [] if it cannot."""

    def __init__(self, need, preemptor_project, needed, context, candidates, cost, keep_fair) -> None:
        self.need, self.preemptor_project, self.needed = need, preemptor_project, needed
        self.context, self.candidates, self.cost, self.keep_fair = context, candidates, cost, keep_fair

    def allows(self, ledger: _Ledger, workflow: RunningWorkflow) -> bool:
        return ledger.allows(workflow, self.preemptor_project, self.needed, keep_fair=self.keep_fair)

    def ledger(self) -> _Ledger:
        return _Ledger(self.context, {w.project for w in self.candidates})

    def greedy(self, key) -> list[RunningWorkflow]:
        """Pick by `key` (then the project furthest above its fair share, then id) until the need is covered,
        re-reading eligibility after each pick; then drop, most expensive first, what the others cover."""
        ledger, chosen, freed, left = self.ledger(), [], ZERO, list(self.candidates)
        while not self.need.fits_in(freed):
            useful = {w.id: _covered(w, self.need, freed) for w in left if self.allows(ledger, w)}
            eligible = [w for w in left if useful.get(w.id, 0) > 0]
            if not eligible:
                return []
            pick = min(
                eligible,
                key=lambda w: (
                    *key(w, useful[w.id]),
                    -_excess(w.project, self.needed, self.context, ledger.project[w.project]),
                    w.id,
                ),
            )
            left.remove(pick)
            chosen.append(pick)
            freed = freed + pick.usage
            ledger.take(pick)
        for workflow in sorted(chosen, key=lambda w: (self.cost[w.id], w.id), reverse=True):
            rest = [w for w in chosen if w is not workflow]
            if _covers(rest, self.need):
                chosen = rest
        return chosen

    def alone(self) -> list[RunningWorkflow]:
        """The cheapest single workflow that covers the whole need by itself."""
        ledger = self.ledger()
        alone = [w for w in self.candidates if self.need.fits_in(w.usage) and self.allows(ledger, w)]
        best = min(alone, key=lambda w: (self.cost[w.id], w.id), default=None)
        return [best] if best else []


def _victim(
    workflow: RunningWorkflow, preemptor: str, preemptor_project: str, needed: list[str], context: ReclaimContext
) -> Victim:
    resource = next((r for r in needed if workflow.usage.get(r) > 0), needed[0])
    allocated = context.allocated.get(workflow.project, ZERO).get(resource)
    deserved = context.deserved.get(workflow.project, ZERO).get(resource)
    fair = context.fair(workflow.project, resource)

    def said(value: int) -> str:
        return amount_noun(resource, value, context.gpu_noun)

    why = {
        DESERVED: "which is within its guaranteed quota",
        DEPARTMENT: (f"whose department {context.department_of.get(preemptor_project)} is within its guaranteed quota"),
        FAIR_SHARE: "which stays within its fair share (reclaim toward fair share)",
    }[context.strategy]
    text = (
        f"preempted: project {workflow.project} was using {said(allocated)} over quota "
        f"(deserved {said(deserved)}, fair share {said(fair)}); "
        f"reclaimed for workflow {preemptor} of project {preemptor_project}, {why}"
    )
    reason = {
        "code": "RECLAIMED",
        "strategy": context.strategy,
        "project": workflow.project,
        "resource": resource,
        "allocated": allocated,
        "deserved": deserved,
        "fair_share": fair,
        "usage": workflow.usage.get(resource),
        "runtime_seconds": workflow.runtime_seconds,
        "preemptor": preemptor,
        "preemptor_project": preemptor_project,
        "text": text,
    }
    return Victim(workflow.id, workflow.project, workflow.usage, preemptor, preemptor_project, reason)
