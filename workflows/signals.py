"""What workflows announce to the layers above (they listen; workflows imports none of them).

`workflow_finished(sender=Workflow, workflow_pk=…)`: a workflow reached a finished status (completed, failed,
cancelled, preempted, timed out). Sent once its transaction has committed, so a receiver reads the new state;
quotas runs admission for the workflow's node pool (capacity was freed).
"""

from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

workflow_finished = Signal()


def announce_finished(workflow_pk: int) -> None:
    """Send `workflow_finished` after the current transaction commits (a failing receiver is logged, never
    turned into an error of the write that finished the workflow)."""
    from workflows.models import Workflow

    transaction.on_commit(lambda: workflow_finished.send(sender=Workflow, workflow_pk=workflow_pk), robust=True)
