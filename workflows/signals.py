"""What workflows announce to the layers above (they listen; workflows imports none of them).

`workflow_finished(sender=Workflow, workflow_pk=…)`: a workflow reached a finished status (completed, failed,
cancelled, preempted, timed out). Sent once its transaction has committed, so a receiver reads the new state;
quotas runs admission for the workflow's node pool (capacity was freed).

`task_events(sender=TaskEvent, events=[(task_pk, kind, at), …])`: events were recorded for tasks (a pod
started, exited, was preempted, interrupted, cancelled…; `at` the cluster's time where it has one). Sent
inside the transaction that recorded them, so what a receiver writes commits or rolls back with them; the
usage record opens and closes task attempts on it (usage.receivers).
"""

from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

workflow_finished = Signal()
task_events = Signal()


def announce_finished(workflow_pk: int) -> None:
    """Send `workflow_finished` after the current transaction commits (a failing receiver is logged, never
    turned into an error of the write that finished the workflow)."""
    from workflows.models import Workflow

    transaction.on_commit(lambda: workflow_finished.send(sender=Workflow, workflow_pk=workflow_pk), robust=True)
