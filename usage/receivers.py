"""The usage app's signal receivers, connected by `usage.apps.UsageConfig.ready()` (docs/architecture.md,
"Reactions across apps"). Imports are lazy: this module is imported while the apps load."""

from __future__ import annotations


def task_events(sender, *, events, **kwargs) -> None:
    """Task events were recorded (in their transaction): open and close usage attempts with them."""
    from usage.services import record

    record.on_events(events)


def workflow_finished(sender, *, workflow_pk, **kwargs) -> None:
    """A workflow finished (after commit): remember its wait and outcome."""
    from usage.services import record

    record.record_workflow(workflow_pk)
