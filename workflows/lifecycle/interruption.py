"""Spot interruptions: a task whose node was a spot instance taken back ends with the reason "spot
interruption" and follows its exit action (docs/workflows.md, "Spot interruptions").

What the cloud and the kubelet do: the node gets the taint `aws-node-termination-handler/spot-itn`
(NoSchedule) and the annotation `pool-portal.dev/spot-interruption-at`; after the notice every pod bound to it
ends Failed with the condition DisruptionTarget=True (reason TerminationByKubelet), its containers terminated
(exit code 143, SIGTERM); then the node is deleted, and its pods may be deleted with it.

A drain evicts the pods first, through the Eviction API (the condition's reason EvictionByEvictionAPI; the taint
manager's is DeletionByTaintManager): since Kubernetes 1.27 such a pod also ends Failed before it is removed.

Recognized here:
* a finished pod with a DisruptionTarget condition (any of those three reasons) whose node carries the spot taint
  or is gone;
* a pod that vanished before the portal saw it end (deleted with its node, or evicted by the drain) whose node
  carried the spot taint, or is gone while the pod carries a DisruptionTarget condition (the watcher may never
  have seen the taint: the notice can be shorter than a resync).
The node is asked of the inventory first (it keeps taints), then of the cluster: the pod watcher may see the pod
fail before the inventory has seen the taint, and the node may already be gone from both.

What follows (OSMO gives a pod with a DisruptionTarget condition FAILED_BACKEND_ERROR, exit code 3001, and its
exit action follows from that code): the exit action for 3001, else for the container's own exit code (143),
looked up in the task's exitActions, then the pool's default_exit_actions. RESCHEDULE with retries left: the
task goes back to PENDING as its next attempt (a new pod, `<workflow>-<task>-r<N>`); otherwise it ends
FAILED_BACKEND_ERROR with exit code 3001 and exit reason "spot interruption". Either way the task keeps a
record in `Task.interruptions` (node, time, attempt, action) and a SPOT_INTERRUPTION event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clusters.kube import nodes, pods
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from clusters.machinepools.spec import SPOT_INTERRUPTION_TAINT
from clusters.models import Backend, Node
from workflows.lifecycle.exits import COMPLETE, FAIL, RESCHEDULE, exit_action, reschedule
from workflows.lifecycle.settle import settle
from workflows.lifecycle.transitions import ACTIVE, backend_of, happened, lock, record_event, transition
from workflows.models import Task, TaskStatus

SPOT_REASON = "spot interruption"
INTERRUPTED_EXIT_CODE = 3001  # OSMO's ExitCode.FAILED_BACKEND_ERROR, what it gives a DisruptionTarget pod
DISRUPTION_CONDITION = "DisruptionTarget"
BY_KUBELET = "TerminationByKubelet"
# who stops a pod of a reclaimed node: the kubelet at shutdown, a drain's eviction, the taint manager (NoExecute)
DISRUPTION_REASONS = frozenset({BY_KUBELET, "EvictionByEvictionAPI", "DeletionByTaintManager"})
TAINTED, GONE, PRESENT = "tainted", "gone", "present"


@dataclass(frozen=True)
class Interruption:
    node: str
    at: datetime  # when the pod was stopped (the DisruptionTarget condition), else when the portal saw it gone
    container_exit_code: int | None = None
    message: str = ""  # what the cluster said of the pod

    @property
    def text(self) -> str:
        return f"{SPOT_REASON} on node {self.node} at {self.at:%Y-%m-%d %H:%M:%S} UTC"


def has_spot_taint(taints: object) -> bool:
    return any(isinstance(t, dict) and t.get("key") == SPOT_INTERRUPTION_TAINT for t in taints or ())


def node_evidence(backend_id: int, name: str, *, connect_to=connect) -> str:
    """TAINTED (the spot taint is on it), GONE (no such node) or PRESENT (there, untainted): the inventory's
    row when it shows the taint, else the cluster's answer; the inventory's word when the cluster is unreachable."""
    taints = Node.objects.filter(backend_id=backend_id, name=name).values_list("taints", flat=True).first()
    if taints is not None and has_spot_taint(taints):
        return TAINTED
    try:
        raw = nodes.read_node(connect_to(Backend.objects.get(pk=backend_id)), name)
    except KubeError:
        return GONE if taints is None else PRESENT
    if raw is None:
        return GONE
    return TAINTED if has_spot_taint((raw.get("spec") or {}).get("taints")) else PRESENT


def disruption(raw: dict | None) -> dict | None:
    """The pod's DisruptionTarget=True condition set by whoever stopped it for its node (DISRUPTION_REASONS)."""
    for condition in ((raw or {}).get("status") or {}).get("conditions") or ():
        if (
            isinstance(condition, dict)
            and condition.get("type") == DISRUPTION_CONDITION
            and condition.get("status") == "True"
            and condition.get("reason") in DISRUPTION_REASONS
        ):
            return condition
    return None


def of_pod(task: Task, raw: dict, state: pods.PodState) -> Interruption | None:
    """The interruption that ended this finished pod, or None when it ended for any other reason."""
    condition = disruption(raw) if state.terminal else None
    node = state.node or task.node
    if condition is None or not node or node_evidence(backend_of(task), node) == PRESENT:
        return None
    at = pods.parse_time(condition.get("lastTransitionTime")) or state.finished_at or timezone.now()
    status = raw.get("status") or {}  # the pod's own word (the kubelet's), before its container's "Error"
    reason, said = str(status.get("reason") or state.reason), str(status.get("message") or state.message)
    message = f"{reason}: {said}" if said else reason
    return Interruption(node, at, state.exit_code, message)


def of_lost_pod(task: Task, raw: dict | None) -> Interruption | None:
    """The interruption that took this vanished pod away with its node, or None."""
    node = task.node or str(((raw or {}).get("spec") or {}).get("nodeName") or "")
    if not node:
        return None
    evidence, condition = node_evidence(backend_of(task), node), disruption(raw)
    if evidence == PRESENT or (evidence == GONE and condition is None):
        return None
    if condition is None:
        return Interruption(node, timezone.now(), None, "the pod was deleted with its node")
    at = pods.parse_time(condition.get("lastTransitionTime")) or timezone.now()
    return Interruption(node, at, None, f"{condition.get('reason')}: {condition.get('message') or 'evicted'}")


def end_lost(task: Task, spot: Interruption) -> bool:
    """`end` for a pod no longer there, in its own transaction (the caller holds no lock)."""
    with transaction.atomic():
        if not lock(task) or task.status not in ACTIVE:
            return False
        done = end(task, spot)
        if done:
            settle(task.workflow_id)
    return done


def end(task: Task, spot: Interruption) -> bool:
    """The interrupted attempt ends and its exit action decides what follows (module docstring). Call under
    `lock`. False when another writer moved the task first."""
    if task.status not in ACTIVE:
        return False
    at = happened(task, spot.at)
    code, container = INTERRUPTED_EXIT_CODE, spot.container_exit_code
    action, source = exit_action(code, task.exit_actions, task.workflow.pool.default_exit_actions, also=(container,))
    codes = f"exit code {code}" + (f", the container's {container}" if container is not None else "")
    limit = settings.WORKFLOW_MAX_RETRIES_PER_TASK
    if action == RESCHEDULE and task.retry_id >= limit:
        action, source = FAIL, f"{source}: RESCHEDULE, but all {limit} retries are used"
    attempt = task.retry_id + 1
    record = {
        "node": spot.node,
        "at": spot.at.isoformat(),
        "attempt": attempt,
        "pod": task.pod_name,
        "action": action,
        "next_attempt": attempt + 1 if action == RESCHEDULE else None,
    }
    history = [*task.interruptions, record]
    if action == RESCHEDULE:
        record_event(task, "SPOT_INTERRUPTION", f"{spot.text}: attempt {attempt} stopped ({codes})", at=at)
        why = f"{spot.text}; rescheduled as attempt {attempt + 1} ({codes}; {source}: RESCHEDULE)"
        if not reschedule(task, why, at=at):
            return False
        Task.objects.filter(pk=task.pk).update(interruptions=history)
        task.interruptions = history
        return True
    status = TaskStatus.COMPLETED if action == COMPLETE else TaskStatus.FAILED_BACKEND_ERROR
    ended = transition(
        task,
        ACTIVE,
        status=status,
        exit_code=code,
        exit_reason=SPOT_REASON,
        exit_message=f"{spot.text}: {spot.message}"[:4000] if spot.message else spot.text,
        finished_at=at,
        node=task.node or spot.node,
        interruptions=history,
        error="" if status == TaskStatus.COMPLETED else f"{spot.text} ({codes}; {source}: {action})"[:4000],
    )
    if ended:
        record_event(task, "SPOT_INTERRUPTION", f"{spot.text}: {status} ({codes}; {source}: {action})", at=at)
    return ended
