"""The usage app's wiring: `ready()` connects its receivers (usage.receivers), one line each, and installs the
per-backend price overrides in `clusters.machinepools.pricing`. Nothing else lives here."""

from django.apps import AppConfig


class UsageConfig(AppConfig):
    """The portal's memory: usage records, rollups, cost and waits (docs/usage.md); above workflows."""

    name = "usage"
    verbose_name = "Usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clusters.machinepools import pricing
        from portal import lazy
        from workflows.signals import task_events, workflow_finished

        # by path (portal.lazy): the usage services load with the first call, not at start-up
        lazy.connect(task_events, "usage.receivers.task_events", dispatch_uid="usage.task_events")
        lazy.connect(workflow_finished, "usage.receivers.workflow_finished", dispatch_uid="usage.workflow_finished")
        pricing.install_overrides(lazy.function("usage.services.prices.overrides_of"))
