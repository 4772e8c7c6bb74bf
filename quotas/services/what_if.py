"""What-if (docs/quotas.md, "What-if"; issue #32): replay a recorded period under today's quotas (the baseline)
and under proposed changes, through the pure engine admission runs (pools.engine.replay over
pools.engine.admission_loop and quota_pass.run_admission), side by side with what actually happened; and what
the change does right now to the live queue.

The input, read in a constant number of queries whatever the period:
- the workload: a synthetic one when given (quotas.services.what_if_workload: jobs with a project, node pool,
  GPUs, submission offset and duration; no "actual" then), else the `usage.WorkflowRecord`s submitted in
  [start, end) (finished workflows: one still queued or running at the time of the what-if has no record yet and
  is left out). Arrival = submitted_at; GPUs per node pool = the record's `parts` (the lead node pool's `requests`
  when it has none); duration = finished_at − running_at. A workflow that never ran (cancelled or timed out while
  queued) arrives too and leaves the queue at its finished_at unless the replay starts it before (then it does no
  work: pools.engine.replay). A part in a node pool that no longer exists drops the workflow (counted in
  `left_out`);
- capacities: today's, as admission reads them (`quotas.services.state.states`: the Ready schedulable nodes' GPUs);
- quota trees: the ones in force at the period's start (quotas.services.what_if_config: each node pool's NODE_POOL
  revision current then; a node pool created later replays with today's). A revision written during the period
  does not switch the replay: the whole period replays with the start's quotas (`config` says which revision);
  the proposed changes apply to those trees;
- the admission period (QUOTA_ADMISSION_SECONDS) and each node pool's minimum runtime, as admission uses them;
- prices: per node pool, the recorded cost of its GPU attempts over their GPU-hours in the period (0 when none).

"Actual", from the record: waits submitted → admitted (p50/p95), GPU-hours and cost of the workflows' task
attempts (`usage.TaskAttempt`; an attempt still running counts up to now), preemptions, and the idle guarantee
of the period as the usage report counts it (`usage.services.guarantee`, from the hourly deserved samples; the
replays count it the same way, per node pool and hour).

Right now (`right_now`): for each node pool a change touches, one admission pass of the live state
(`NodePoolState.engine_state()`, what admission decides on) with today's tree and with the changed one: the
queued workflows it would admit (and no longer admit), the running ones it would preempt, and the running
non-preemptible ones that would sit above their project's new deserved quota (preemptible once re-admitted).

Reading needs what `quota show` needs (the REST door: `pool:List`); each project's rows are shown only to those
who may see that project's quotas (teams.quota_visibility), and a change may only name teams they see.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.utils import timezone

from pools.engine.admission_loop import HOUR, percentile
from pools.engine.quota_model import NO_PROJECT, QuotaTree, Resources
from pools.engine.quota_pass import run_admission
from pools.engine.replay import ReplayInput, ReplayJob
from portal.errors import DomainError
from quotas.models import NodePool
from quotas.services import what_if_workload
from quotas.services.admission_passes import min_runtime_seconds
from quotas.services.replay_pair import replay_pair
from quotas.services.state import NodePoolState, states
from quotas.services.what_if_changes import Change, apply_changes, check_targets, parse_changes
from quotas.services.what_if_config import trees_at
from quotas.services.what_if_machines import resolve_machine_pools
from teams.quota_visibility import EVERYTHING, QuotaView
from usage.models import TaskAttempt, WorkflowRecord
from usage.services.guarantee import idle_guarantee
from usage.services.report import ReportQuery

MAX_DAYS = 31
DEFAULT_DAYS = 7


# -- the period ----------------------------------------------------------------------------------------------------
def moment(text: object, field: str) -> datetime:
    """`2026-11-25` (midnight UTC) or an ISO 8601 time (UTC when it names no zone)."""
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=UTC)
    if isinstance(text, date):
        return datetime.combine(text, time(), tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise DomainError("a date (2026-11-25) or an ISO 8601 time", field=field, value=text) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def period(
    start: object = None, end: object = None, *, now: datetime | None = None, synthetic: bool = False
) -> tuple[datetime, datetime]:
    """[start, end): by default the last DEFAULT_DAYS days up to now (a synthetic workload's: the next DEFAULT_DAYS
    days from now, under today's quotas); at most MAX_DAYS days, end after start."""
    now = now or timezone.now()
    if synthetic and start in (None, "") and end in (None, ""):
        start = now
    if synthetic and start not in (None, "") and end in (None, ""):
        start_at = moment(start, "start")
        try:
            end_at = start_at + timedelta(days=DEFAULT_DAYS)
        except OverflowError:
            raise DomainError("too late: give --to", field="start", value=str(start)) from None
        return start_at, end_at
    end_at = now if end in (None, "") else moment(end, "end")
    try:
        start_at = end_at - timedelta(days=DEFAULT_DAYS) if start in (None, "") else moment(start, "start")
    except OverflowError:
        raise DomainError("too early: no record goes back that far", field="end", value=str(end)) from None
    if end_at <= start_at:
        raise DomainError("must be after the start", field="end", value=str(end))
    if end_at - start_at > timedelta(days=MAX_DAYS):
        raise DomainError(f"the period is at most {MAX_DAYS} days", field="start", value=str(start))
    return start_at, end_at


# -- what-if -------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Recorded:
    jobs: list[ReplayJob]
    left_out: int
    actual: dict[str, dict]
    prices: dict[str, float]
    departments: dict[str, str]


def what_if(
    start: datetime,
    end: datetime,
    change_texts: list,
    *,
    view: QuotaView = EVERYTHING,
    now: datetime | None = None,
    workload: object = None,
) -> dict:
    """Baseline and proposed replays of [start, end), side by side with the record, and the right-now effect.
    `workload` (a list of jobs: quotas.services.what_if_workload) replaces the recorded workflows: nothing
    actually happened then, so `actual` is empty, and prices are the last DEFAULT_DAYS days' recorded ones."""
    changes = resolve_machine_pools(parse_changes(change_texts))
    now = now or timezone.now()
    live = list(states(NodePool.objects.select_related("backend").order_by("name"), now=now).values())
    trees = {s.node_pool.name: s.tree for s in live}
    capacity = {s.node_pool.name: s.capacity["gpu"] for s in live}
    check_targets(changes, trees, _visible(view))
    then = trees_at(start, trees)
    proposed_trees, proposed_capacity = apply_changes(changes, then.trees, capacity)
    if workload is None:
        recorded = _recorded(start, end, set(trees), now)
    else:
        recorded = _synthetic(workload, start, end, trees, view, now)
    runtimes = {s.node_pool.name: min_runtime_seconds(s.node_pool) for s in live}

    def given(given_trees, given_capacity) -> ReplayInput:
        return ReplayInput(
            tuple(recorded.jobs),
            given_capacity,
            given_trees,
            int((end - start).total_seconds()),
            period=settings.QUOTA_ADMISSION_SECONDS,
            min_runtime_seconds=runtimes,
            prices=recorded.prices,
        )

    baseline, proposed = replay_pair(
        given(then.trees, capacity), given(proposed_trees, proposed_capacity) if changes else None
    )
    departments = {p.name: p.department for tree in trees.values() for p in tree.projects}
    departments.update(recorded.departments)
    names = sorted(set(baseline.projects) | set(proposed.projects) | set(recorded.actual))
    rows = [
        {
            "project": "(none)" if name == NO_PROJECT else name,
            "department": departments.get(name) or "",
            "actual": recorded.actual.get(name, _no_actual()),
            "baseline": _figures(baseline, name),
            "proposed": _figures(proposed, name),
        }
        for name in names
        if name == NO_PROJECT or view.shows_project(name)
    ]
    return {
        "start": start.isoformat(),
        "end": end.isoformat(),
        "workload": "recorded" if workload is None else "synthetic",
        "changes": [c.text for c in changes],
        "workflows": len(recorded.jobs),
        "left_out": recorded.left_out,
        "config": then.revisions,
        "prices": {pool: round(price, 4) for pool, price in sorted(recorded.prices.items())},
        "projects": rows,
        "right_now": right_now(changes, live, view),
    }


def _visible(view: QuotaView):
    def visible(kind: str, name: str) -> bool:
        return view.shows_department(name) if kind == "department" else view.shows_project(name)

    return visible


def _figures(report, name: str) -> dict:
    row = report.projects.get(name)
    if row is None:
        return {"jobs": 0, "started": 0, "never_started": 0, "wait_p50_s": None, "wait_p95_s": None, "gpu_hours": 0.0,
                "gpu_hours_lost": 0.0, "preemptions": 0, "idle_guarantee_gpu_hours": 0.0, "cost": 0.0}  # fmt: skip
    return row.figures(report.input.prices)


def _no_actual() -> dict:
    return {"jobs": 0, "started": 0, "wait_p50_s": None, "wait_p95_s": None, "gpu_hours": 0.0, "preemptions": 0,
            "idle_guarantee_gpu_hours": None, "cost": 0.0}  # fmt: skip


def _recorded(start: datetime, end: datetime, pools: set[str], now: datetime) -> Recorded:
    """The period's workload and what actually happened (two queries)."""
    records = WorkflowRecord.objects.filter(submitted_at__gte=start, submitted_at__lt=end)
    records = records.order_by("submitted_at", "id")
    rows = records.values_list(
        "workflow_id", "project", "department", "node_pool", "priority", "requests", "parts",
        "submitted_at", "admitted_at", "running_at", "finished_at", "preemptions",
    )  # fmt: skip
    jobs, left_out = [], 0
    waits: dict[str, list[int]] = defaultdict(list)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # jobs, preemptions
    departments: dict[str, str] = {}
    for wid, project, department, lead, priority, requests, parts, submitted, admitted, running, finished, pre in rows:
        project = project or NO_PROJECT
        departments.setdefault(project, department)
        counts[project][0] += 1
        counts[project][1] += pre
        started = admitted or running
        if started is not None:
            waits[project].append(max(0, int((started - submitted).total_seconds())))
        gpus = {pool: int((asked or {}).get("gpu", 0)) for pool, asked in (parts or {}).items()}
        if not gpus and lead:
            gpus = {lead: int((requests or {}).get("gpu", 0))}
        if not gpus or any(pool not in pools for pool in gpus):
            left_out += 1
            continue
        ran = running is not None and finished is not None
        jobs.append(
            ReplayJob(
                wid,
                project,
                gpus,
                int((submitted - start).total_seconds()),
                max(0, int((finished - running).total_seconds())) if ran else None,
                priority or "NORMAL",
                cancel_after=max(0, int(((finished or end) - submitted).total_seconds())),
            )
        )
    used, cost, prices = _attempts(records, now)
    idle = _idle_guarantee(start, end, now)
    actual = {
        project: {
            "jobs": counts[project][0],
            "started": len(waits[project]),
            "wait_p50_s": percentile(waits[project], 0.5),
            "wait_p95_s": percentile(waits[project], 0.95),
            "gpu_hours": round(used.get(project, 0.0) / HOUR, 2),
            "preemptions": counts[project][1],
            "idle_guarantee_gpu_hours": idle.get(project),
            "cost": round(cost.get(project, 0.0), 2),
        }
        for project in counts
    }
    return Recorded(jobs, left_out, actual, prices, departments)


def _synthetic(workload: object, start: datetime, end: datetime, trees: dict, view: QuotaView, now: datetime):
    """The jobs of a synthetic workload (checked against the node pools and the projects the caller sees), with
    no actual figures; prices from the last DEFAULT_DAYS days' record (one query)."""
    known = {project.name for tree in trees.values() for project in tree.projects}
    jobs = what_if_workload.parse(
        workload,
        seconds=int((end - start).total_seconds()),
        project_known=lambda name: name in known and view.shows_project(name),
        node_pools=trees,
    )
    recent = WorkflowRecord.objects.filter(submitted_at__gte=now - timedelta(days=DEFAULT_DAYS), submitted_at__lt=now)
    prices = _attempts(recent, now)[2]
    return Recorded(jobs, 0, {}, prices, {})


def _idle_guarantee(start: datetime, end: datetime, now: datetime) -> dict[str, float]:
    """Per project, the GPU-hours of its deserved quotas it left idle in the period, as the usage report counts
    them (usage.services.guarantee, from the hourly deserved samples); three queries."""
    found = idle_guarantee(ReportQuery(start, end, ("project",), "total"), now)
    return {(group[0] or NO_PROJECT): round(idle / HOUR, 2) for (_, group), (_, idle) in found.items()}


def _attempts(records, now: datetime) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Per project GPU-seconds and cost (dollars) of the period's workflows' attempts, and per node pool the
    price of a GPU-hour (their cost over their GPU-hours). One query."""
    rows = TaskAttempt.objects.filter(workflow_id__in=records.values("workflow_id")).values_list(
        "project", "node_pool", "gpu", "started_at", "ended_at", "hourly_cost_micros"
    )
    used: dict[str, float] = defaultdict(float)
    cost: dict[str, float] = defaultdict(float)
    pool_cost: dict[str, float] = defaultdict(float)
    pool_gpu_hours: dict[str, float] = defaultdict(float)
    for project, pool, gpu, started, ended, micros in rows:
        seconds = max(0.0, ((ended or now) - started).total_seconds())
        dollars = micros * seconds / HOUR / 1_000_000
        project = project or NO_PROJECT
        used[project] += gpu * seconds
        cost[project] += dollars
        if gpu:
            pool_cost[pool] += dollars
            pool_gpu_hours[pool] += gpu * seconds / HOUR
    prices = {pool: pool_cost[pool] / hours for pool, hours in pool_gpu_hours.items() if hours}
    return used, cost, prices


# -- right now -----------------------------------------------------------------------------------------------------
def right_now(changes: list[Change], live: list[NodePoolState], view: QuotaView = EVERYTHING) -> list[dict]:
    """Per node pool a change touches: what one admission pass of the live state decides differently."""
    touched = {c.node_pool for c in changes if c.node_pool}
    everywhere = any(c.kind == "priority" for c in changes)
    found = []
    for current in live:
        name = current.node_pool.name
        if name not in touched and not everywhere:
            continue
        before_state = current.engine_state()
        here = [c for c in changes if c.node_pool in ("", name)]  # this node pool's, and priorities (everywhere)
        trees, capacity = apply_changes(here, {name: before_state.tree}, {name: current.capacity["gpu"]})
        cpu, memory = current.engine_capacity.cpu, current.engine_capacity.memory
        changed = Resources(capacity[name], cpu, memory)
        after_state = dataclasses.replace(before_state, tree=trees[name], capacity=changed)
        found.append(_difference(name, before_state, run_admission(before_state), run_admission(after_state), view))
    return found


def _difference(name: str, before_state, before, after, view: QuotaView) -> dict:
    def shown(project: str) -> bool:
        return project == NO_PROJECT or view.shows_project(project)

    admitted_before = {a.workflow for a in before.admitted}
    admitted_after = {a.workflow for a in after.admitted}
    preempted_before = {v.workflow for v in before.preempted}
    return {
        "node_pool": name,
        "admits": [a.workflow for a in after.admitted if a.workflow not in admitted_before and shown(a.project)],
        "no_longer_admits": [
            a.workflow for a in before.admitted if a.workflow not in admitted_after and shown(a.project)
        ],
        "preempts": [v.workflow for v in after.preempted if v.workflow not in preempted_before and shown(v.project)],
        "above_deserved": [
            w
            for w, project in _above_deserved(before_state, after.tree)
            if shown(project) and (w, project) not in _above_deserved(before_state, before.tree)
        ],
    }


def _above_deserved(state, tree: QuotaTree) -> list[tuple[str, str]]:
    """Running non-preemptible workflows beyond their project's deserved GPUs in `tree` (the youngest first go
    above it): admitted within a guarantee the change takes away."""
    deserved = {p.name: p.quota("gpu").deserved for p in tree.projects}
    found = []
    by_project: dict[str, list] = defaultdict(list)
    for workflow in state.running:
        if not workflow.preemptible:
            by_project[workflow.project].append(workflow)
    for project, running in by_project.items():
        held = 0
        for workflow in sorted(running, key=lambda w: (-w.runtime_seconds, w.id)):  # the oldest keep theirs
            held += workflow.usage.gpu
            if held > deserved.get(project, 0) and workflow.usage.gpu:
                found.append((workflow.id, project))
    return found
