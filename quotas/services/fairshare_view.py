"""What the admin's fair-share page of one node pool shows (docs/quotas.md, "Seeing it"): per project, for one
resource, its deserved quota, its fair share, what it uses and what it borrows, as bars on one scale; and who
is borrowing from whom (pools.engine.borrowing, through quotas.services.state: the same numbers admission and
`quota show` use). Three queries (the state), whatever the number of projects and workflows.

When the node pool weighs past usage (NODE_POOL `time_based_fair_share`), also each team's over-quota weight
before and after its usage, and its normalised usage (quotas.services.usage_weights; one more query).

On a backend that delegates to KAI-Scheduler or Kueue, also the node pool "as the scheduler sees it": per project
what it has allocated and its status message, read from its objects' status (quotas.services.scheduler_status:
one list call, five more queries); a cluster that cannot be read is one line, never an error page.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.schedulers import DELEGATING
from pools.engine.borrowing import Loan
from quotas import units
from quotas.models import RESOURCES, NodePool
from quotas.services.scheduler_status import SCHEDULER_NAMES, SchedulerStatus, read_status
from quotas.services.state import NO_PROJECT
from quotas.services.state import state as state_of
from quotas.services.usage_weights import WeightRow, Window, weight_rows

SERIES = (
    ("deserved", "Deserved", "guaranteed quota"),
    ("fair_share", "Fair share", "what the scheduler would give it now: deserved part + its slice of the surplus"),
    ("allocated", "In use", "requests of its admitted, unfinished workflows"),
    ("borrowed", "Borrowed", "in use above deserved: preemptible"),
)


@dataclass(frozen=True)
class Bar:
    series: str
    label: str
    value: int
    shown: str
    percent: float  # of the chart's scale


@dataclass(frozen=True)
class ProjectBars:
    project: str
    department: str
    bars: tuple[Bar, ...]
    lent: str
    idle: str


@dataclass(frozen=True)
class LoanRow:
    borrower: str
    lender: str  # "" = capacity nobody is guaranteed
    amount: str


@dataclass(frozen=True)
class SchedulerRow:
    """One project's queue in this node pool, as the scheduler reports it (figures shown; "-": not reported)."""

    project: str
    queue: str
    allocated: tuple[str, ...]  # per resource, in RESOURCES order
    borrowed: str  # Kueue: beyond nominal quota ("" for KAI)
    workloads: str  # Kueue: "2 admitted, 3 pending" ("" for KAI)
    message: str


@dataclass(frozen=True)
class SchedulerView:
    scheduler: str  # kai | kueue
    name: str  # KAI-Scheduler | Kueue
    rows: tuple[SchedulerRow, ...] = ()
    error: str = ""  # "could not read the scheduler's status: …"


@dataclass(frozen=True)
class UsageWeights:
    """Time-based fair share: the window in words, and per team its weight before and after usage (shown)."""

    text: str
    rows: tuple[WeightRow, ...]


@dataclass(frozen=True)
class FairSharePage:
    node_pool: NodePool
    resource: str
    resources: tuple[str, ...]
    managed: bool
    over_quota: bool
    capacity: str
    in_use: str
    free: str
    queued_workflows: int
    unassigned_workflows: int
    scale: str
    projects: tuple[ProjectBars, ...]
    loans: tuple[LoanRow, ...]
    scheduler: SchedulerView | None = None  # None: the portal admits
    usage_weights: UsageWeights | None = None  # None: past usage does not count here
    series: tuple[tuple[str, str, str], ...] = SERIES


def fairshare_page(node_pool: NodePool, resource: str = "gpu") -> FairSharePage:
    """`resource` not one of gpu, cpu, memory: gpu."""
    resource = resource if resource in RESOURCES else "gpu"
    current = state_of(node_pool)
    view = current.borrowing(resource)
    capacity = view.capacity
    used = sum(w.requests.get(resource) for w in current.in_flight)
    scale = max([capacity, 1, *(max(r.deserved, r.fair_share, r.allocated) for r in view.rows)])

    def show(value: int) -> str:
        return units.show(resource, value)

    projects = tuple(
        ProjectBars(
            _said(row.project),
            _said(row.department),
            tuple(
                Bar(key, label, getattr(row, key), show(getattr(row, key)), round(100 * getattr(row, key) / scale, 2))
                for key, label, _ in SERIES
            ),
            show(row.lent),
            show(row.idle),
        )
        for row in view.rows
    )
    return FairSharePage(
        node_pool=node_pool,
        resource=resource,
        resources=RESOURCES,
        managed=current.managed,
        over_quota=node_pool.over_quota,
        capacity=show(capacity),
        in_use=show(used),
        free=show(max(0, capacity - used)),
        queued_workflows=len(current.queued),
        unassigned_workflows=len(current.unassigned),
        scale=show(scale),
        projects=projects,
        loans=tuple(_loan(loan, show) for loan in view.loans),
        scheduler=_scheduler_view(node_pool),
        usage_weights=_usage_weights(node_pool, current, resource),
    )


def _usage_weights(node_pool: NodePool, current, resource: str) -> UsageWeights | None:
    window, history = Window.of(node_pool), current.history
    if window is None or history is None:
        return None
    rows = tuple(
        WeightRow(r.kind, _said(r.name), _said(r.department), r.weight, r.usage, r.before, r.after)
        for r in weight_rows(current.engine_state().tree, history, resource)
    )
    return UsageWeights(window.text(), rows)


def _scheduler_view(node_pool: NodePool) -> SchedulerView | None:
    backend = node_pool.backend
    if backend.quota_scheduler not in DELEGATING:
        return None
    scheduler, name = backend.quota_scheduler, SCHEDULER_NAMES[backend.quota_scheduler]
    read = read_status(backend)
    if read.status is None:
        return SchedulerView(scheduler, name, error=read.error)
    rows = tuple(_scheduler_row(read.status, usage) for usage in read.status.usage if usage.node_pool == node_pool.name)
    return SchedulerView(scheduler, name, rows)


def _scheduler_row(status: SchedulerStatus, usage) -> SchedulerRow:
    kueue = status.scheduler == "kueue"
    borrowed = ", ".join(f"{r} {units.show(r, usage.borrowed[r])}" for r in RESOURCES if usage.borrowed.get(r))
    workloads = ""
    if kueue:
        admitted, pending = (
            status.admitted_workloads.get(usage.project, 0),
            status.pending_workloads.get(usage.project, 0),
        )
        workloads = f"{admitted} admitted, {pending} pending"
    return SchedulerRow(
        usage.project,
        usage.queue,
        tuple(units.show(r, usage.allocated.get(r)) for r in RESOURCES),
        (borrowed or "none") if kueue else "",
        workloads,
        status.messages.get(usage.queue, ""),
    )


def _loan(loan: Loan, show) -> LoanRow:
    return LoanRow(_said(loan.borrower), _said(loan.lender or ""), show(loan.amount))


def _said(team: str) -> str:
    """The engine's team of workflows charged to no project, in words (it borrows like any team)."""
    return "no project" if team == NO_PROJECT else team
