"""The "your quota" panels of the catalog cards and the pool page, and why a workflow waits or was preempted.

For each node pool the pool's platforms are charged to (quotas.services.node_pools.charged_node_pools, the
rule of charged_node_pool, cached under the charging epoch) and each project the viewer belongs to (holds the role of,
teams.services.member_projects): deserved, in use, could borrow now — GPUs first, CPU and memory compact.
The numbers are quotas.services.standing's (read through quotas.services.state, as admission reads them).
Query cost is constant in pools and platforms: projects (1), charging (2), the node pools' state (3).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pools.models import Pool
from quotas import units
from quotas.models import NodePool
from quotas.services.node_pools import charged_node_pools
from quotas.services.standing import NodePoolStanding, ResourceStanding, standings
from teams.quota_visibility import EVERYTHING, QuotaView, preemption_as_seen
from teams.services import member_projects


@dataclass(frozen=True)
class Figure:
    """One resource of one project, as shown: amounts already in the resource's unit."""

    resource: str
    deserved: str
    in_use: str
    could_borrow: str
    limit: str
    queued: str
    borrowed: str
    guaranteed_left: str
    percent_of_deserved: int  # in use against deserved, for the bar (capped at 100)
    over: bool  # in use above deserved
    fair_share_amount: int = 0  # the engine's fair share now, in the resource's unit (team usage shows it)
    deserved_amount: int = 0  # deserved now, in the resource's unit (team usage's yardstick where no sample)

    @classmethod
    def of(cls, figures: ResourceStanding) -> Figure:
        def show(value: int | None) -> str:
            return _show(figures.resource, value)

        deserved = figures.deserved
        return cls(
            figures.resource,
            show(deserved),
            show(figures.in_use),
            show(figures.could_borrow),
            show(figures.limit) if figures.limit is not None else "",
            show(figures.queued),
            show(figures.borrowed),
            show(figures.guaranteed_left),
            min(100, round(100 * figures.in_use / deserved)) if deserved else (100 if figures.in_use else 0),
            figures.in_use > deserved,
            figures.fair_share,
            deserved,
        )


@dataclass(frozen=True)
class ProjectQuota:
    project: str
    gpu: Figure
    cpu: Figure
    memory: Figure


@dataclass
class QuotaPanel:
    node_pool: str
    platforms: list[str]
    managed: bool
    over_quota: bool
    queued_workflows: int
    projects: list[ProjectQuota] = field(default_factory=list)


def _show(resource: str, value: int | None) -> str:
    return units.show(resource, value)


def panels_for(pools: Iterable[Pool], who) -> dict[str, list[QuotaPanel]]:
    """pool name → its quota panels for `who` (none when `who` belongs to no project)."""
    projects = member_projects(who)
    if not projects:
        return {}
    pools = list(pools)
    charged = charged_node_pools(pools)
    node_pools: dict[int, NodePool] = {np.pk: np for np in charged.values()}
    found = standings(node_pools.values(), projects)
    panels: dict[str, list[QuotaPanel]] = {}
    for pool in pools:
        by_node_pool: dict[int, list[str]] = {}
        for platform in pool.platforms.all():
            node_pool = charged.get((pool.pk, platform.name))
            if node_pool is not None:
                by_node_pool.setdefault(node_pool.pk, []).append(platform.name)
        panels[pool.name] = [
            _panel(found[pk], names) for pk, names in sorted(by_node_pool.items(), key=_by_name(node_pools))
        ]
    return panels


def _by_name(node_pools: dict[int, NodePool]):
    return lambda item: node_pools[item[0]].name


def _panel(standing: NodePoolStanding, platforms: list[str]) -> QuotaPanel:
    return QuotaPanel(
        standing.node_pool.name,
        sorted(platforms),
        standing.managed,
        standing.over_quota,
        standing.queued_workflows,
        [ProjectQuota(p.project, Figure.of(p.gpu), Figure.of(p.cpu), Figure.of(p.memory)) for p in standing.projects],
    )


# --- why a workflow waits, or was stopped --------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    kind: str  # "queued" | "preempted"
    text: str
    position: int | None = None
    by: str = ""


def workflow_note(workflow, view: QuotaView = EVERYTHING) -> Note | None:
    """What to say next to a queued workflow (its queue_reason) or a preempted one (its preemption). The
    workflow and project a preemption was for are named only to a viewer who may see that project's quota
    (teams.quota_visibility: docs/access.md "Quota visibility")."""
    if workflow.status == "QUEUED":
        reason = workflow.queue_reason or {}
        text = str(reason.get("text") or "waiting for admission to its node pool's quota")
        position = reason.get("position")
        if isinstance(position, int):  # the page shows the position once, on its own: not again in the text
            return Note("queued", text.removesuffix(f"; position {position} in the queue"), position)
        return Note("queued", text, None)
    if workflow.status == "FAILED_PREEMPTED":
        reason = preemption_as_seen(workflow.preemption, view) or {}
        project = reason.get("preemptor_project") or ""
        text = str(reason.get("text") or reason.get("reason") or "preempted to give capacity back to its owner")
        by = reason.get("by") or reason.get("preemptor") or ""
        if by and project:
            by = f"workflow {by} of project {project}"
        elif by:
            by = f"workflow {by}"
        return Note("preempted", text, by=str(by))
    return None
