"""A project's standing in a node pool, as a researcher sees it on the pool pages (docs/quotas.md, "Seeing it"):
its deserved quota, what it uses, and what it could borrow now, per resource.

Read through quotas.services.state (the same state admission, `quota show` and the fair-share page read), so
the pages never disagree with the admission pass. Per (node pool, project, resource):

* `deserved`   — guaranteed; `limit` — hard cap (None = none);
* `in_use`     — the requests of its admitted, unfinished workflows (its allocation);
* `queued`     — what its queued workflows ask for;
* `borrowed`   — in use above deserved (preemptible: reclaimed when an owner needs its guarantee back);
* `could_borrow` — how much above deserved a new workflow of the project could be admitted with *now*:
  0 when the node pool's over-quota switch is off; else the node pool's free capacity (capacity − every
  admitted, unfinished workflow's requests) less the project's own unused guarantee, bounded by the fair
  share the project would get if it asked for everything (the engine's fair share, which applies its limit
  and the other projects' demand by priority and weight) less what it already holds above deserved.

"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection

from pools.engine.fairshare import fair_shares
from pools.engine.quota_model import Resources
from portal import gc_tuning
from quotas.models import RESOURCES, NodePool
from quotas.services.state import NodePoolState, cached_trees, states


@dataclass(frozen=True)
class ResourceStanding:
    resource: str
    deserved: int
    limit: int | None
    in_use: int
    queued: int
    fair_share: int
    borrowed: int
    could_borrow: int

    @property
    def guaranteed_left(self) -> int:
        """Unused guarantee: what the project may still start without borrowing."""
        return max(0, self.deserved - self.in_use)


@dataclass
class ProjectStanding:
    project: str
    resources: dict[str, ResourceStanding]

    @property
    def gpu(self) -> ResourceStanding:
        return self.resources["gpu"]

    @property
    def cpu(self) -> ResourceStanding:
        return self.resources["cpu"]

    @property
    def memory(self) -> ResourceStanding:
        return self.resources["memory"]


@dataclass
class NodePoolStanding:
    node_pool: NodePool
    managed: bool
    over_quota: bool
    capacity: dict[str, int]
    free: dict[str, int]
    queued_workflows: int
    projects: list[ProjectStanding] = field(default_factory=list)


def standings(node_pools: Iterable[NodePool], projects: Iterable[str]) -> dict[int, NodePoolStanding]:
    """node pool id → the standing of `projects` (those with quota rows there) in it: three queries."""
    wanted = set(projects)
    return {pk: standing_of(state, wanted) for pk, state in states(node_pools, with_tasks=False).items()}


def holding(node_pools: Iterable[NodePool], projects: Iterable[str]) -> list[NodePool]:
    """The node pools where any of `projects` holds a quota: a deserved share or a limit of some resource (every
    project has a zero row in every node pool, which is no quota). Read from the cached quota trees, so a viewer's
    standings state only the node pools worth a line of theirs (a fleet's project holds a quota in a few of its
    100 node pools; docs/scale.md)."""
    pools, wanted = list(node_pools), set(projects)
    trees = cached_trees(pools)[0]
    return [p for p in pools if any(_holds(team) for team in trees[p.pk].projects if team.name in wanted)]


def _holds(team) -> bool:
    return any(quota.deserved > 0 or quota.limit is not None for quota in team.quotas.values())


@dataclass
class _Derived:
    """What a node pool's standings derive from its state by running the engine, for every project."""

    rows: dict[str, dict[str, dict]]  # project → resource → NodePoolState.project_rows()'s row
    asking: dict[str, dict[str, int]] = field(default_factory=dict)  # project → _asking_everything


# node pool id → (the tree, the rest of the engine's input, what was derived from them): the last per node pool,
# so pages that read the same state again (every researcher's, until a workflow or a quota moves) run no engine
_DERIVED: dict[int, tuple[object, tuple, _Derived]] = {}


def _input_key(state: NodePoolState) -> tuple:
    """Everything of the engine's input but the quota tree, by value. Runtimes are left out: they move no fair
    share nor allocation, which is all a standing shows. The tree is compared by identity: quotas.services.state
    serves one object per node pool while the charging epoch holds (cached_trees), a fresh one otherwise."""
    history = state.history and (
        state.history.k_milli,
        frozenset((r, team, share) for r, used in state.history.usage.items() for team, share in used.items()),
    )
    node_pool = state.node_pool
    return (
        node_pool.name,
        node_pool.over_quota,
        tuple(sorted(state.capacity.items())),
        state.guarantee_rule,
        state.gpu_model,
        state.managed,
        tuple(state.in_flight),
        tuple(state.queued),
        history,
    )


def _derived(state: NodePoolState) -> _Derived:
    if connection.in_atomic_block:  # as the caches it rests on: nothing kept from inside a transaction
        return _Derived(_by_project(state))
    key = _input_key(state)
    entry = _DERIVED.get(state.node_pool.pk)
    if entry is not None and entry[0] is state.tree and entry[1] == key:
        return entry[2]
    found = _Derived(_by_project(state))
    _DERIVED[state.node_pool.pk] = (state.tree, key, found)
    gc_tuning.settle_soon()  # every project's rows of a node pool, kept: freeze them (portal.gc_tuning)
    return found


def _by_project(state: NodePoolState) -> dict[str, dict[str, dict]]:
    found: dict[str, dict[str, dict]] = {}
    for row in state.project_rows():
        found.setdefault(row["project"], {})[row["resource"]] = row
    return found


def standing_of(state: NodePoolState, projects: set[str]) -> NodePoolStanding:
    derived = _derived(state)
    rows = {name: derived.rows[name] for name in projects if name in derived.rows}  # not every project's rows
    used = Resources()
    for workflow in state.in_flight:
        used = used + workflow.requests
    free = {r: max(0, state.capacity[r] - used.get(r)) for r in RESOURCES}
    over_quota = state.node_pool.over_quota
    found = NodePoolStanding(
        state.node_pool,
        state.managed,
        over_quota,
        state.capacity,
        free,
        len(state.queued),
    )
    names = sorted(rows)
    for name in names:
        if over_quota and name not in derived.asking:
            derived.asking[name] = _asking_everything(state, name)
        asking = derived.asking.get(name, {})
        figures = {}
        for resource in RESOURCES:
            row = rows[name][resource]
            figures[resource] = ResourceStanding(
                resource=resource,
                deserved=row["deserved"],
                limit=row["limit"],
                in_use=row["allocated"],
                queued=row["queued"],
                fair_share=row["fair_share"],
                borrowed=row["borrowed"],
                could_borrow=_could_borrow(row, free[resource], asking.get(resource, 0)) if over_quota else 0,
            )
        found.projects.append(ProjectStanding(name, figures))
    return found


def _could_borrow(row: dict, free: int, share_if_asking: int) -> int:
    above = max(row["allocated"], row["deserved"])
    own_unused = max(0, row["deserved"] - row["allocated"])
    return max(0, min(free - own_unused, share_if_asking - above))


def _asking_everything(state: NodePoolState, project: str) -> dict[str, int]:
    """The project's fair share per resource if it asked for the whole node pool while the others keep
    their demand (held + queued), as the admission pass computes fair shares: on its input
    (`NodePoolState.engine_state`, the team `(none)` included)."""
    engine_input = state.engine_state()
    requests: dict[str, Resources] = defaultdict(Resources)
    for name, held in state.result.allocated_before.items():
        requests[name] = requests[name] + held
    for workflow in engine_input.queued:
        requests[workflow.project] = requests[workflow.project] + workflow.demand
    capacity = engine_input.capacity
    requests[project] = capacity  # nobody can be given more than the node pool holds
    shares = fair_shares(
        capacity,
        engine_input.tree,
        requests,
        over_quota=True,
        rule=engine_input.guarantee_rule,
        history=engine_input.history,
    )
    return {r: shares[r].projects[project].fair_share if project in shares[r].projects else 0 for r in RESOURCES}
