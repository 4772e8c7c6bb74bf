"""Admission for one node pool: read its live state, run the pure engine's pass, apply the decisions through
workflows' hooks (docs/admission.md, "Queued workflows, reasons, reclaim and exit actions").

`admission_pass(node_pool)` runs under a per-node-pool lock — `SELECT … FOR UPDATE` of the NodePool row, in a
transaction — so one pass at a time decides for a node pool, however many workers run it; a second pass waits
for the first to commit and then reads what it wrote (no workflow is admitted twice). Within the lock:

1. `quotas.services.state.state(node_pool)` reads the quota tree, the capacity and the queued and in-flight
   parts charged to the node pool (a workflow's tasks there: a workflow across node pools has one part in each,
   admitted by each pass, and starts with its last part: docs/admission.md, "Workflows across node pools");
2. unmanaged node pool (no quota guarantees or caps anything): every queued workflow is admitted at once,
   non-preemptible (the portal's behaviour before quotas);
3. managed: `pools.engine.quota_pass.run_admission` decides; `admitted` → `workflows.lifecycle.admit_hold_preempt.admit`
   (with the node pool's nodeSelector, the preemptible label and an annotation saying why), `held` → `hold`
   (the structured reason, with its text and queue position), `preempted` → `preempt` (the victim's reason:
   who it was stopped for and the numbers). A preempted workflow whose exit action is RESCHEDULE is QUEUED
   again; the pass then runs once more (at most `ROUNDS` times) so the room reclaimed is given out now.

Workflows charged to no project (or to a project without quota rows in the node pool) have no quota. The
engine's input is `NodePoolState.engine_state()`, the one the pages and `quota show` read too. In a
managed node pool they share the spare capacity as one more team, `(none)`: no deserved quota, over-quota
weight 1, ranked after every project (priority below the lowest). So they are admitted only into capacity
nobody with a quota asks for, always preemptible, reclaimed like any over-quota work, and held with a reason
("no project: …") otherwise; with over-quota off they wait until the node pool becomes unmanaged.

Each node pool may set its own minimum runtime and periodic-pass period (NODE_POOL `min_runtime_seconds`,
`admission_seconds`; null: QUOTA_MIN_RUNTIME_SECONDS, QUOTA_ADMISSION_SECONDS). Every pass, whatever ran it,
records its time (`AdmissionPass`); the periodic pass (`pass_all`, every QUOTA_ADMISSION_TICK_SECONDS) visits
a node pool with queued work only once its period has elapsed since then (`node_pools_due`). Queue events
still run a node pool's pass at once.

Only the resources some quota in the node pool guarantees or caps are admitted by quota
(`quotas.services.state.managed_resources`): with GPU quotas only, a workflow's CPU and memory requests neither
hold it nor make it preemptible.

The periodic pass (`pass_all`) passes only the node pools whose state changed: a pass that admitted and
preempted nothing leaves the node pool's fingerprint (`pools.engine.quota_pass.state_fingerprint`: quotas,
capacity, queued and running work, which running work is past its minimum runtime) in `_QUIET` once its
transaction commits; the next periodic pass that reads the same fingerprint skips the engine and the writes
(it would decide the same). Event-driven passes (a submission, a finished workflow) always run. `_QUIET` is
per process: a worker that has not seen a node pool passes it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from pools.engine.quota_pass import run_admission, state_fingerprint
from portal import metrics
from quotas.models import AdmissionPass, NodePool
from quotas.services import gang
from quotas.services.node_pools import node_selector
from quotas.services.state import NO_PROJECT, NodePoolState, state
from workflows.lifecycle import admit_hold_preempt as hooks
from workflows.models import Workflow, WorkflowPart, WorkflowStatus

log = logging.getLogger(__name__)

ROUNDS = 3  # passes in a row while reclaim frees room (a reclaimed workflow is QUEUED again at once)
_QUIET: dict[int, int] = {}  # node pool id → fingerprint of its last committed pass that changed nothing


@dataclass
class PassReport:
    node_pool: str
    managed: bool = False
    rounds: int = 0
    admitted: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    skipped: bool = False  # periodic pass: nothing changed since a pass that changed nothing

    def as_dict(self) -> dict:
        return dict(vars(self))


def admission_pass(node_pool: NodePool | int, *, periodic: bool = False) -> PassReport:
    """One admission pass for the node pool (module docstring); repeated while it preempts. `periodic`: skip
    it if the node pool's state is the one a pass that changed nothing left."""
    node_pool_id = node_pool if isinstance(node_pool, int) else node_pool.pk
    report = PassReport(node_pool="")
    for _ in range(ROUNDS):
        with transaction.atomic():
            locked = NodePool.objects.select_for_update().filter(pk=node_pool_id).first()
            if locked is None:
                return report
            report.node_pool = locked.name
            report.rounds += 1
            if report.rounds == 1:
                _record_pass(locked.pk)
            preempted = _round(locked, report, periodic=periodic)
        if not preempted:
            break
    if report.admitted:
        metrics.ADMISSIONS.labels(report.node_pool).inc(len(report.admitted))
    return report


def _round(node_pool: NodePool, report: PassReport, *, periodic: bool = False) -> int:
    """Decide and apply once, under the lock. Returns how many workflows were preempted (or released)."""
    current = state(node_pool, min_runtime_seconds=min_runtime_seconds(node_pool))
    report.managed = current.managed
    if not current.queued:
        return 0
    selector = node_selector(node_pool)
    if not current.managed:
        pks = _locked_pks([w.workflow_id for w in current.queued])
        for workflow in current.queued:
            why = f"node pool {node_pool.name} has no quotas: admitted at once"
            if hooks.admit(
                pks[workflow.workflow_id],
                preemptible=False,
                node_pool=node_pool.name,
                node_selector=selector,
                annotations={hooks.ADMISSION_ANNOTATION: why},
            ):
                report.admitted.append(workflow.workflow_id)
        return 0
    engine_input = current.engine_state()
    fingerprint = state_fingerprint(engine_input)
    if periodic and _QUIET.get(node_pool.pk) == fingerprint:
        report.skipped = True
        return 0
    result = run_admission(engine_input)
    _QUIET.pop(node_pool.pk, None)
    if not (result.admitted or result.preempted):
        transaction.on_commit(lambda: _QUIET.__setitem__(node_pool.pk, fingerprint))
    held_pks = _pks([h.workflow for h in result.held])
    held_gangs = gang.gangs(held_pks.values())
    pks = held_pks | _locked_pks(
        [
            *(a.workflow for a in result.admitted),
            *(v.workflow for v in result.preempted),
            *(h.workflow for h in result.held if held_pks[h.workflow] in held_gangs),
        ]
    )
    preempted = 0
    for victim in result.preempted:
        reason = {**_named(dict(victim.reason)), "by": victim.preemptor, "node_pool": node_pool.name}
        if hooks.preempt(pks[victim.workflow], reason):
            report.preempted.append(victim.workflow)
            preempted += 1
    for admission in result.admitted:
        if hooks.admit(
            pks[admission.workflow],
            preemptible=admission.preemptible,
            node_pool=node_pool.name,
            node_selector=selector,
            annotations={hooks.ADMISSION_ANNOTATION: admitted_because(node_pool.name, admission)},
        ):
            report.admitted.append(admission.workflow)
    _hold(node_pool.name, current, result.held, pks, held_gangs, report)
    _wake_other_parts(node_pool.name, [pks[w] for w in report.preempted if w in pks])
    return preempted


def _hold(name: str, current: NodePoolState, held: list, pks: dict[str, int], gangs: dict, report: PassReport) -> None:
    """Write why each held workflow waits. A workflow with parts in several node pools says which part holds
    it ("task X in node pool Y: …"), written by the pass of its first waiting part (by node pool name) only,
    so two passes do not overwrite each other's reason."""
    tasks = {w.workflow_id: w.tasks for w in current.queued}
    for decision in held:
        pk = pks[decision.workflow]
        reason = {**_named(decision.reason.as_dict()), "node_pool": name}
        if pk in gangs:
            if not gang.speaks_for(gangs[pk], name):
                continue
            part = list(tasks.get(decision.workflow, ()))
            reason["text"] = f"task {', '.join(part)} in node pool {name}: {reason.get('text', '')}"
            reason["part"] = {"node_pool": name, "tasks": part}
        hooks.hold(pk, reason)
        report.held.append(decision.workflow)


def min_runtime_seconds(node_pool: NodePool) -> int:
    """The node pool's own minimum runtime, else the settings' default."""
    own = node_pool.min_runtime_seconds
    return settings.QUOTA_MIN_RUNTIME_SECONDS if own is None else own


def _record_pass(node_pool_id: int) -> None:
    """This pass's time, one upsert (under the node pool's lock, so passes record in the order they ran)."""
    AdmissionPass.objects.bulk_create(
        [AdmissionPass(node_pool_id=node_pool_id, at=timezone.now())],
        update_conflicts=True,
        unique_fields=["node_pool"],
        update_fields=["at"],
    )


def admitted_because(node_pool: str, admission) -> str:
    if admission.project == NO_PROJECT:
        return f"node pool {node_pool}: charged to no project, admitted into spare capacity (preemptible)"
    if admission.preemptible:
        return (
            f"node pool {node_pool}: project {admission.project} over its deserved quota, within its fair share "
            "(preemptible: may be reclaimed)"
        )
    return f"node pool {node_pool}: within project {admission.project}'s deserved quota (non-preemptible)"


def _named(reason: dict) -> dict:
    """The `(none)` team said in words."""
    for key in ("team", "project", "preemptor_project"):
        if reason.get(key) == NO_PROJECT:
            reason[key] = ""
    if "text" in reason:
        reason["text"] = (
            str(reason["text"])
            .replace(f"department {NO_PROJECT}", "no project")
            .replace(f"project {NO_PROJECT}", "no project")
        )
    return reason


def _pks(workflow_ids: list[str]) -> dict[str, int]:
    if not workflow_ids:
        return {}
    return dict(Workflow.objects.filter(workflow_id__in=workflow_ids).values_list("workflow_id", "pk"))


def _locked_pks(workflow_ids: list[str]) -> dict[str, int]:
    """workflow id → pk, every row locked now in pk order: two passes touching the same workflows (parts in
    both node pools) lock them in one order, so they wait for each other instead of deadlocking. Workflows
    held with one part only are touched by no other pass: they are not locked (a pass may hold thousands)."""
    if not workflow_ids:
        return {}
    rows = Workflow.objects.select_for_update().filter(workflow_id__in=workflow_ids).order_by("pk")
    return dict(rows.values_list("workflow_id", "pk"))


def _wake_other_parts(name: str, workflow_pks: list[int]) -> None:
    """Preempted or released workflows wait again in every node pool of theirs: those passes run after commit."""
    if workflow_pks:
        parts = WorkflowPart.objects.filter(workflow_id__in=workflow_pks).exclude(node_pool=name)
        transaction.on_commit(lambda: request_passes(parts), robust=True)


# ------------------------------------------------------------------------------------------ when passes run


def request_pass(node_pool_id: int) -> None:
    """Run a pass for the node pool through Celery (in-process in the embedded default, eager)."""
    from quotas import tasks  # lazy: the task module loads Celery (workflows.enqueue does the same)

    tasks.admission_pass.delay(node_pool_id)


def request_passes(parts) -> None:
    """Run a pass for each node pool of `parts` (a WorkflowPart queryset): two queries."""
    request_passes_in(set(parts.values_list("node_pool", flat=True)))


def request_passes_in(names: set[str]) -> None:
    """Run a pass for each node pool named: one query."""
    for node_pool_id in NodePool.objects.filter(name__in=sorted(names)).values_list("pk", flat=True):
        request_pass(node_pool_id)


def node_pools_due(now: datetime | None = None) -> list[int]:
    """Ids of the node pools where a part of some QUEUED workflow waits and whose admission period has elapsed
    since their last pass (or that never had one): what the periodic pass visits. Two queries, whatever the
    number of node pools."""
    now = now or timezone.now()
    waiting = WorkflowPart.objects.filter(workflow__status=WorkflowStatus.QUEUED, admitted_at__isnull=True)
    names = set(waiting.values_list("node_pool", flat=True))
    rows = NodePool.objects.filter(name__in=names).values_list("pk", "admission_seconds", "last_pass__at")
    default = settings.QUOTA_ADMISSION_SECONDS
    return sorted(
        pk for pk, own, last in rows if last is None or now - last >= timedelta(seconds=default if own is None else own)
    )


def pass_all(now: datetime | None = None) -> dict:
    """The periodic pass: every node pool that is due (a node pool failing does not stop the others)."""
    report = {"node_pools": 0, "skipped": 0, "admitted": 0, "held": 0, "preempted": 0, "errors": []}
    for node_pool_id in node_pools_due(now):
        try:
            done = admission_pass(node_pool_id, periodic=True)
        except Exception as error:  # noqa: BLE001  (one node pool's failure is reported, the rest still run)
            log.exception("admission pass of node pool #%s failed", node_pool_id)
            report["errors"].append(f"node pool #{node_pool_id}: {error}")
            continue
        report["node_pools"] += 1
        report["skipped"] += done.skipped
        for key in ("admitted", "held", "preempted"):
            report[key] += len(getattr(done, key))
    return report
