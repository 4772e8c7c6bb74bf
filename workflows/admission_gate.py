"""The submission gate: how a layer above workflows (quotas) decides whether a new workflow waits for admission,
without workflows knowing anything of quotas (docs/admission.md, "Queued workflows").

One gate may be registered (quotas does it in its AppConfig.ready()). With none, submission is what it always
was: the workflow is stored PENDING and its pod creation enqueued. With one, `workflows.services.submit` asks it,
just before the submission's transaction (so outside any, unless its caller holds one), where each task is
charged (`charge`, once per platform the workflow's tasks use). The tasks charged to one node pool form one part
of the workflow (`WorkflowPart`, their requests summed):

* `Charge(node_pool, queue=False)`: the part is admitted at once (a node pool without quotas, or one whose own
  scheduler admits), its tasks' pods get the node pool's `node_selector`;
* `Charge(node_pool, queue=True)`: the part waits for its node pool's admission.

A workflow with every part admitted at once is PENDING, `admitted_at` now, non-preemptible, pods enqueued as
before; otherwise it is stored QUEUED, and once committed the gate hears of it (`on_queued`) and runs admission,
which moves it on through `workflows.lifecycle.admit_hold_preempt` (admit a part, hold, preempt, release) until its last
part is admitted. Before the transaction the gate reads what its check needs (`checker`); inside it, once
every task is resolved, that check may refuse the workflow (a task no node can hold, a request above a hard
limit), before anything is written.
  Every task's stored pod carries its node pool's `node_selector` from submission on (its keys win over the
  platform's), so a pod never lands outside the node pool it is charged to, admitted at once or not.

It also answers "why is it not running" for a workflow another scheduler admits (`scheduler_says`): one
workflow's `explain` and API detail ask it, never a list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pools import confinement


@dataclass(frozen=True)
class Charge:
    node_pool: str  # the node pool's name ("" when none applies)
    queue: bool  # True: wait QUEUED for admission; False: admitted at once
    node_selector: dict[str, str] = field(default_factory=dict)  # what lands a pod admitted at once there


@dataclass(frozen=True)
class TaskAsk:
    """One resolved task as the gate checks it at submission: where it is charged and what its pod asks
    (quota units: gpu devices, cpu millicores, memory bytes)."""

    task: str
    node_pool: str
    requests: dict[str, int]


def named_reasons(placement: dict, charge: Charge | None) -> dict:
    """A placement (`{"fits", "rejected": {node: [reason]}}`) whose reasons about the node pool's selector say
    so: "not in node pool X (the node pool this platform is charged to): …" (changed in place)."""
    if charge is None:
        return placement
    return confinement.named_reasons(placement, confinement.Confinement(charge.node_pool, charge.node_selector))


class Gate(Protocol):
    def charge(self, workflow, platform: str) -> Charge:
        """Where a task of `workflow` (not saved yet: its pool, project, priority and name are set) running on
        `platform` is charged, and whether it waits. Runs just before the submission's transaction
        (the workflow's id is not known yet): outside a transaction, it may answer from a cache."""

    def checker(self, workflow, node_pools: set[str]) -> Callable[[list[TaskAsk]], None]:
        """Read now (before the submission's transaction) what it takes to tell whether `workflow`'s tasks
        charged to `node_pools` can ever run, and return the check: called inside the transaction with the
        resolved tasks, it raises a PortalError (field, value, reason) for a task no node of its node pool can
        hold, or a node pool's part above its project's (or department's) hard limit, and reads nothing."""

    def on_queued(self, node_pools: set[str]) -> None:
        """Parts of a workflow were stored waiting in `node_pools` (called after commit): run admission there."""

    def scheduler_says(self, workflow) -> dict | None:
        """For a workflow admitted at once whose backend's own scheduler (KAI, Kueue) decides when it runs,
        and not running yet: why it waits, as that scheduler says (`reason`, a sentence, and more keys for the
        `queue` object). None when there is nothing to say. May read the cluster: one workflow at a time."""


_gate: Gate | None = None


def register(gate: Gate | None) -> Gate | None:
    """Install `gate` (None removes it); returns the one it replaces (tests restore it)."""
    global _gate
    previous, _gate = _gate, gate
    return previous


def current() -> Gate | None:
    return _gate
