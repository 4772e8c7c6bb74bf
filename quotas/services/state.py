"""A node pool's live quota state, read once and shared by admission, the doors and the pages, so the CLI's
`quota show`, the REST answer, the fair-share page and the admission pass can never disagree: they all run the
engine on the one input `NodePoolState.engine_state()` builds (tests/quotas/test_one_engine_input.py).

`states(node_pools)` reads, whatever the number of node pools: the quota rows (one query), the capacities with
the GPU model of each (one: reasons say "A100 GPUs"), and the parts of workflows charged to them that are
queued or in flight (one): a workflow whose tasks use several node pools counts in each only what its tasks
there ask (`WorkflowPart`). It turns them into the pure engine's `PoolState` (pools.engine.quota_pass), whose
`run_admission` gives fair shares, what would be admitted or held and why, and `borrowing_view` who borrows
from whom.

In flight = admitted and not finished (PENDING, WAITING, RUNNING), or a part admitted while another part of
its workflow still waits (RESERVED: it holds its room): what a project *uses* (its allocation) is the
`requests` of those parts. A workflow charged to no project (or to a project without quota rows here) holds
no quota: the engine sees it as the team `(none)` (`engine_state`), and `unassigned` lists it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from django.utils import timezone

from access import epoch
from pools.engine.borrowing import BorrowingView, borrowing_view
from pools.engine.fairshare import KAI, SHRINK
from pools.engine.quota_model import NO_PROJECT, ZERO, QuotaTree, Resources, TeamQuota, UsageHistory, with_no_project
from pools.engine.quota_model import Quota as EngineQuota
from pools.engine.quota_pass import PassResult, PoolState, QueuedWorkflow, run_admission
from pools.engine.reclaim import RunningWorkflow
from quotas.models import RESOURCES, NodePool, Quota
from quotas.services import usage_weights
from quotas.services.capacity import cached_capacities_and_models
from workflows.models import WorkflowPart, WorkflowStatus

IN_FLIGHT = (WorkflowStatus.PENDING, WorkflowStatus.WAITING, WorkflowStatus.RUNNING)
RESERVED = "RESERVED"  # a part admitted while its workflow waits for another part (docs/admission.md)
GPU_NOUN_DEFAULT = "GPUs"


@dataclass(frozen=True)
class Charged:
    """A queued or in-flight workflow as the quota state sees it."""

    workflow_id: str
    project: str  # "" when charged to no project
    status: str
    requests: Resources
    priority: str
    preemptible: bool
    created_at: datetime
    admitted_at: datetime | None
    tasks: tuple[str, ...] = ()  # the names of the workflow's tasks charged to this node pool

    def runtime_seconds(self, now: datetime, min_runtime_seconds: int) -> int:
        """Since admission; a reservation has run nothing: exactly the minimum runtime, so it is the first
        to be reclaimed and never protected by it (docs/admission.md)."""
        if self.status == RESERVED:
            return min_runtime_seconds
        return max(0, int((now - (self.admitted_at or self.created_at)).total_seconds()))


@dataclass
class NodePoolState:
    node_pool: NodePool
    capacity: dict[str, int]  # gpu, cpu, memory, nodes
    tree: QuotaTree
    managed: bool
    in_flight: list[Charged] = field(default_factory=list)
    queued: list[Charged] = field(default_factory=list)
    now: datetime = field(default_factory=timezone.now)
    min_runtime_seconds: int = 0
    gpu_model: str = ""  # "A100" when its GPU nodes are all one model (capacity.gpu_models)
    # capacity below the guarantees: what the pages show is what admits here, the portal (SHRINK) or KAI
    guarantee_rule: str = SHRINK
    # past usage, when the node pool weighs it (time-based fair share: quotas.services.usage_weights)
    history: UsageHistory | None = None

    @property
    def unassigned(self) -> list[Charged]:
        """Queued or in-flight workflows charged to no project (no quota can hold them)."""
        return [w for w in (*self.in_flight, *self.queued) if not w.project]

    @property
    def engine_capacity(self) -> Resources:
        """The capacity in quota resources (`capacity` also counts the nodes)."""
        return Resources.of({r: self.capacity[r] for r in RESOURCES})

    def engine_state(self) -> PoolState:
        """The quota engine's input, the one every reader builds from: the admission pass decides on it and
        `result` (the pages, `quota show`, the REST answer) shows what it decides.

        Workflows charged to no project (or to a project without quota rows here) form the team `(none)`: no
        deserved quota, over-quota weight 1, ranked after every project, always preemptible, so they take only
        capacity nobody with a quota asks for (docs/admission.md). Only the resources some quota guarantees or
        caps (`managed_resources`) are counted: the others neither hold nor make preemptible."""
        team = _team_of(self.tree)
        counted = managed_resources(self.tree)

        def only_counted(amount: Resources) -> Resources:
            return Resources(**{r: amount.get(r) if r in counted else 0 for r in RESOURCES})

        running = tuple(
            RunningWorkflow(
                id=w.workflow_id,
                project=team(w.project),
                usage=only_counted(w.requests),
                preemptible=w.preemptible or team(w.project) == NO_PROJECT,
                runtime_seconds=w.runtime_seconds(self.now, self.min_runtime_seconds),
            )
            for w in self.in_flight
        )
        queued = tuple(
            QueuedWorkflow(
                id=w.workflow_id,
                project=team(w.project),
                demand=only_counted(w.requests),
                submitted=w.created_at.timestamp(),
                priority=w.priority,
            )
            for w in self.queued
        )
        uses_none = any(w.project == NO_PROJECT for w in (*running, *queued))
        return PoolState(
            guarantee_rule=self.guarantee_rule,
            name=self.node_pool.name,
            capacity=self.engine_capacity,
            tree=with_no_project(self.tree) if uses_none else self.tree,
            running=running,
            queued=queued,
            over_quota=self.node_pool.over_quota,
            min_runtime_seconds=self.min_runtime_seconds,
            gpu_noun=gpu_noun(self.gpu_model),
            history=self.history,
        )

    @cached_property
    def result(self) -> PassResult:
        """What an admission pass would decide now (pure; nothing is written)."""
        return run_admission(self.engine_state())

    def borrowing(self, resource: str = "gpu") -> BorrowingView:
        """Who borrows from whom now (the allocation before any new admission)."""
        return borrowing_view(self.result, resource, after=False)

    def project_rows(self) -> list[dict]:
        """Per project and resource, what `quota show` prints: deserved, limit, weight, lend, allocated (in use),
        queued (asked for by queued workflows), fair share, borrowed (in use above deserved)."""
        allocated: dict[str, Resources] = defaultdict(Resources)
        for w in self.in_flight:
            allocated[w.project] = allocated[w.project] + w.requests
        queued: dict[str, Resources] = defaultdict(Resources)
        for w in self.queued:
            queued[w.project] = queued[w.project] + w.requests
        rows = []
        for project in self.tree.projects:
            in_use = allocated.get(project.name, ZERO)
            asked = queued.get(project.name, ZERO)  # not queued[...]: a defaultdict would keep a zero per project
            for resource in RESOURCES:
                quota = project.quota(resource)
                share = self.result.shares[resource].projects.get(project.name)
                used = in_use.get(resource)
                rows.append(
                    {
                        "project": project.name,
                        "department": project.department,
                        "resource": resource,
                        "deserved": quota.deserved,
                        "limit": quota.limit,
                        "weight": quota.weight,
                        "lend": quota.lend,
                        "priority": project.priority,
                        "allocated": used,
                        "queued": asked.get(resource),
                        "fair_share": share.fair_share if share else 0,
                        "borrowed": max(0, used - quota.deserved),
                    }
                )
        return rows


def managed_resources(tree: QuotaTree) -> set[str]:
    """The resources some team's quota guarantees (deserved > 0) or caps (a limit) in the node pool. Only those
    are admitted by quota: a node pool with GPU quotas only does not hold a workflow for the CPU and memory it
    asks (nobody is guaranteed any); Kubernetes still places it by what the nodes have."""
    return {
        resource
        for team in (*tree.departments, *tree.projects)
        for resource, quota in team.quotas.items()
        if quota.deserved > 0 or quota.limit is not None
    }


def _team_of(tree: QuotaTree):
    """The engine's team of a recorded project: itself with quota rows here, else `(none)` (engine_state)."""
    known = {p.name for p in tree.projects}
    return lambda project: project if project in known else NO_PROJECT


def gpu_noun(model: str) -> str:
    """How reasons name the node pool's GPUs: "A100 GPUs" when they are all one model, else "GPUs"."""
    return f"{model} {GPU_NOUN_DEFAULT}" if model else GPU_NOUN_DEFAULT


def states(
    node_pools: Iterable[NodePool],
    *,
    now: datetime | None = None,
    min_runtime_seconds: int = 0,
    with_tasks: bool = True,
) -> dict[int, NodePoolState]:
    """node pool id → its state; three queries whatever the number of node pools, and one more for each node
    pool that weighs past usage (its time-based fair share). Without `with_tasks`, the charged workflows' task
    names are not read (`Charged.tasks` empty): the pages' standings never name a task, and a fleet's thousands of
    live parts are that many JSON documents fewer per page."""
    pools = list(node_pools)
    now = now or timezone.now()
    caps, models = cached_capacities_and_models(pools)  # summed afresh inside a transaction (admission)
    trees, managed, kai = cached_trees(pools)
    charged = _charged([p.name for p in pools], with_tasks)
    found = {}
    for pool in pools:
        state = NodePoolState(
            node_pool=pool,
            capacity=caps[pool.pk],
            tree=trees[pool.pk],
            managed=pool.pk in managed,
            now=now,
            min_runtime_seconds=min_runtime_seconds,
            gpu_model=models[pool.pk],
            guarantee_rule=KAI if pool.pk in kai else SHRINK,
        )
        for w in charged.get(pool.name, ()):
            (state.queued if w.status == WorkflowStatus.QUEUED else state.in_flight).append(w)
        if pool.time_based_fair_share:
            state.history = usage_weights.history(pool, state.engine_capacity, _team_of(state.tree), now)
        found[pool.pk] = state
    return found


def state(node_pool: NodePool, **kwargs) -> NodePoolState:
    return states([node_pool], **kwargs)[node_pool.pk]


# node pool id → (its quota tree, managed, delegates to KAI), per process under the charging epoch
_TREES = epoch.EpochCache(size=1024, epoch=epoch.CHARGING, long_lived=True)  # moved with charge_cache's charges


def cached_trees(pools: list[NodePool]) -> tuple[dict[int, QuotaTree], set[int], set[int]]:
    """`_trees`, from this process's cache while the charging epoch holds (outside a transaction only: admission,
    under its lock, always reads the rows). A fleet's node pool of 500 projects is 1,500 quota rows: reading them
    for every page was most of the catalog's time (docs/scale.md). The epoch moves in the writing transaction
    with every write a tree reads (quotas.services.charge_cache: a NODE_POOL revision, which the quota grid and
    every quota door write; a department or project saved or deleted, which its priority and name are; a BACKEND
    revision, which its quota scheduler is), and an entry lives at most ACCESS_CACHE_SECONDS. The same tree
    object is served while the entry holds, so `standing` may memoise what it derives from it by identity."""

    def load(ids: list[int]) -> dict[int, tuple[QuotaTree, bool, bool]]:
        wanted = set(ids)
        trees, managed, kai = _trees([p for p in pools if p.pk in wanted])
        return {pk: (trees[pk], pk in managed, pk in kai) for pk in trees}

    found = _TREES.lookup_many(dict.fromkeys(p.pk for p in pools), load)
    trees = {pk: tree for pk, (tree, _, _) in found.items()}
    return trees, {pk for pk, entry in found.items() if entry[1]}, {pk for pk, entry in found.items() if entry[2]}


def _trees(pools: list[NodePool]) -> tuple[dict[int, QuotaTree], set[int], set[int]]:
    """Each node pool's quota tree, the node pools some quota manages, and those whose backend delegates to KAI."""
    rows = Quota.objects.filter(node_pool__in=pools).values_list(
        "node_pool_id",
        "resource",
        "deserved",
        "limit",
        "weight",
        "lend",
        "department__name",
        "project__name",
        "project__priority",
        "project__department__name",
        "department__created_at",
        "project__created_at",
        "node_pool__backend__quota_scheduler",
    )
    teams: dict[int, dict[tuple[str, str], dict]] = {p.pk: {} for p in pools}
    managed: set[int] = set()
    kai: set[int] = set()
    alike: dict[tuple, EngineQuota] = {}
    for row in rows:
        pool_id, resource, deserved, limit, weight, lend, dept, project, priority, project_dept = row[:10]
        dept_created, project_created, scheduler = row[10:]
        if deserved > 0 or limit is not None:
            managed.add(pool_id)
        if scheduler == "kai":
            kai.add(pool_id)
        key = ("department", dept) if dept else ("project", project)
        created = (dept_created or project_created).timestamp()  # a tie's leftover unit goes to the older team
        team = teams[pool_id].setdefault(
            key,
            {"quotas": {}, "priority": priority or 0, "department": None if dept else project_dept, "created": created},
        )
        quota = (deserved, limit, weight, lend)  # one object per distinct quota: most rows are alike
        team["quotas"][resource] = alike.get(quota) or alike.setdefault(quota, EngineQuota(*quota))
    trees = {}
    shared: dict[frozenset, dict] = {}  # one mapping per distinct set of quotas, as `alike`
    for pool_id, by_team in teams.items():
        built = {
            kind: tuple(
                TeamQuota(
                    name=name,
                    quotas=shared.setdefault(frozenset(t["quotas"].items()), t["quotas"]),  # read-only: shared
                    priority=t["priority"],
                    department=t["department"],
                    created=t["created"],
                )
                for (k, name), t in sorted(by_team.items())
                if k == kind
            )
            for kind in ("department", "project")
        }
        trees[pool_id] = QuotaTree(departments=built["department"], projects=built["project"])
    return trees, managed, kai


def _charged(names: list[str], with_tasks: bool = True) -> dict[str, list[Charged]]:
    columns = [
        "node_pool",
        "workflow__workflow_id",
        "workflow__project__name",
        "workflow__status",
        "requests",
        "workflow__priority",
        "preemptible",
        "workflow__created_at",
        "workflow__admitted_at",
        "admitted_at",
    ]
    rows = (
        WorkflowPart.objects.filter(node_pool__in=names, workflow__status__in=(WorkflowStatus.QUEUED, *IN_FLIGHT))
        .order_by("workflow__created_at", "workflow_id")
        .values_list(*columns, *(["tasks"] if with_tasks else []))
    )
    found: dict[str, list[Charged]] = defaultdict(list)
    for pool, wid, project, status, requests, priority, preemptible, created, started, reserved, *tasks in rows:
        admitted = started  # the workflow's admission: its runtime counts from there
        if status == WorkflowStatus.QUEUED and reserved is not None:
            status, admitted = RESERVED, reserved
        found[pool].append(
            Charged(
                wid,
                project or "",
                status,
                Resources.of(requests),
                priority,
                preemptible,
                created,
                admitted,
                tuple(tasks[0]) if tasks else (),
            )
        )
    return found
