"""Reclaim: which running workflows to stop so a project's guaranteed (deserved) work fits.

Called by the admission pass (pools.engine.admission) for a queued workflow that is within its project's
deserved quota but does not fit in the node pool's free capacity. Units as in pools.engine.quota_model.

Algorithm (`choose_victims`):
1. Candidates: running workflows that are preemptible (admitted over quota), of another project, that have
   run at least `min_runtime_seconds`, use some resource the preemptor still needs, and whose project holds
   more than its deserved quota of such a resource.
2. Greedy: while the need is not covered, take the project furthest above its fair share — largest
   `(allocated − fair share) / capacity` over the needed resources (exact fractions; ties by project name) —
   among those with candidates left and still above deserved in a needed resource, and stop its youngest
   workflow (shortest runtime, ties by id). Its usage leaves that project's allocation, so the next pick
   sees the project's new position.
3. Just enough: drop, last pick first, every victim without which the others still cover the need.
4. Not enough candidates → None: nothing is stopped (no partial reclaim).

Why this cannot oscillate: the preemptor is admitted within its deserved quota, hence non-preemptible, and
victims are only preemptible (over-quota) workflows of projects above deserved. A victim that comes back and
reclaims in its turn can therefore never stop the workflow that stopped it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from pools.engine.fairshare import FairShare
from pools.engine.quota_model import RESOURCES, Resources
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


@dataclass(frozen=True, slots=True)
class ReclaimContext:
    """What the victim choice reads: capacity, fair shares per resource, each project's deserved quotas
    and current allocation (the admission pass keeps the allocation up to date as it decides)."""

    capacity: Resources
    shares: Mapping[str, FairShare]
    deserved: Mapping[str, Resources]
    allocated: Mapping[str, Resources]
    min_runtime_seconds: int = 0
    gpu_noun: str = "GPUs"


def _needed(need: Resources) -> list[str]:
    return [r for r in RESOURCES if need.get(r) > 0]


def _excess(project: str, needed: list[str], context: ReclaimContext, allocated: Resources) -> Fraction:
    """How far the project is above its fair share, in the needed resource where that is largest,
    as a fraction of the node pool's capacity (so GPUs and bytes compare)."""
    worst = None
    for resource in needed:
        fair = (
            context.shares[resource].projects[project].fair_share if project in context.shares[resource].projects else 0
        )
        over = Fraction(allocated.get(resource) - fair, max(1, context.capacity.get(resource)))
        worst = over if worst is None or over > worst else worst
    return worst if worst is not None else Fraction(0)


def _above_deserved(project: str, needed: list[str], context: ReclaimContext, allocated: Resources) -> bool:
    deserved = context.deserved.get(project, Resources())
    return any(allocated.get(r) > deserved.get(r) for r in needed)


def _covers(victims: Sequence[RunningWorkflow], need: Resources) -> bool:
    freed = Resources()
    for victim in victims:
        freed = freed + victim.usage
    return need.fits_in(freed)


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
    pools: dict[str, list[RunningWorkflow]] = {}
    for workflow in running:
        if (
            workflow.preemptible
            and workflow.project != preemptor_project
            and workflow.runtime_seconds >= context.min_runtime_seconds
            and any(workflow.usage.get(r) > 0 for r in needed)
        ):
            pools.setdefault(workflow.project, []).append(workflow)
    for workflows in pools.values():
        workflows.sort(key=lambda w: (-w.runtime_seconds, w.id))  # youngest last: pop() takes it
    allocated = {project: context.allocated.get(project, Resources()) for project in pools}
    chosen: list[RunningWorkflow] = []
    freed = Resources()
    while not need.fits_in(freed):
        eligible = [p for p, left in pools.items() if left and _above_deserved(p, needed, context, allocated[p])]
        if not eligible:
            return None
        project = min(eligible, key=lambda p: (-_excess(p, needed, context, allocated[p]), p))
        workflow = pools[project].pop()
        chosen.append(workflow)
        freed = freed + workflow.usage
        allocated[project] = allocated[project] - workflow.usage
    for workflow in reversed(list(chosen)):
        rest = [w for w in chosen if w is not workflow]
        if _covers(rest, need):
            chosen = rest
    return [_victim(w, preemptor, preemptor_project, needed, context) for w in chosen]


def _victim(
    workflow: RunningWorkflow, preemptor: str, preemptor_project: str, needed: list[str], context: ReclaimContext
) -> Victim:
    resource = next((r for r in needed if workflow.usage.get(r) > 0), needed[0])
    allocated = context.allocated.get(workflow.project, Resources()).get(resource)
    deserved = context.deserved.get(workflow.project, Resources()).get(resource)
    share = context.shares[resource].projects.get(workflow.project)
    fair = share.fair_share if share else 0

    def said(value: int) -> str:
        return amount_noun(resource, value, context.gpu_noun)

    text = (
        f"preempted: project {workflow.project} was using {said(allocated)} over quota "
        f"(deserved {said(deserved)}, fair share {said(fair)}); "
        f"reclaimed for workflow {preemptor} of project {preemptor_project}, which is within its guaranteed quota"
    )
    reason = {
        "code": "RECLAIMED",
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
