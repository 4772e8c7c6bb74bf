"""The usage app's wiring: `ready()` connects its receivers (usage.receivers), one line each. Nothing else
lives here."""

from django.apps import AppConfig


class UsageConfig(AppConfig):
    """The portal's memory: usage records, rollups, cost and waits (docs/usage.md); above workflows."""

    name = "usage"
    verbose_name = "Usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from usage import receivers
        from workflows.signals import task_events, workflow_finished

        task_events.connect(receivers.task_events, dispatch_uid="usage.task_events")
        workflow_finished.connect(receivers.workflow_finished, dispatch_uid="usage.workflow_finished")
