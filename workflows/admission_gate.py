"""The submission gate: how a layer above workflows (quotas) decides whether a new workflow waits for admission,
without workflows knowing anything of quotas (docs/admission.md, "Queued workflows").

One gate may be registered (quotas does it in its AppConfig.ready()). With none, submission is what it always
was: the workflow is stored PENDING and its pod creation enqueued. With one, `workflows.services.submit` asks it,
just before the submission's transaction (so outside any, unless its caller holds one), where the workflow is
charged (`charge`), and:

* `Charge(node_pool, queue=False)`: admitted at once (a node pool without quotas): PENDING, `admitted_at` now,
  non-preemptible, pods enqueued as before;
* `Charge(node_pool, queue=True)`: stored QUEUED; once committed the gate hears of it (`on_queued`) and runs
  admission, which moves it on through `workflows.lifecycle.admission` (admit, hold, preempt).

It also answers "why is it not running" for a workflow another scheduler admits (`scheduler_says`): one
workflow's `explain` and API detail ask it, never a list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Charge:
    node_pool: str  # the node pool's name ("" when none applies)
    queue: bool  # True: wait QUEUED for admission; False: admitted at once


class Gate(Protocol):
    def charge(self, workflow, lead_platform: str) -> Charge:
        """Where `workflow` (not saved yet: its pool, project, priority and name are set) is charged, given
        the platform of its lead task, and whether it waits. Runs just before the submission's transaction
        (the workflow's id is not known yet): outside a transaction, it may answer from a cache."""

    def on_queued(self, workflow_pks: list[int]) -> None:
        """Workflows were stored QUEUED (called after commit): run admission for their node pools."""

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
