"""The notifications app's wiring: `ready()` connects its receiver (notifications.receivers), one line. Nothing
else lives here."""

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """Email and Slack messages about a user's workflows (docs/self-service.md, "Notifications"); above quotas."""

    name = "notifications"
    verbose_name = "Notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from portal import lazy
        from workflows.signals import workflow_finished

        # imported with the first finished workflow (portal.lazy)
        uid = "notifications.workflow_finished"
        lazy.connect(workflow_finished, "notifications.receivers.workflow_finished", dispatch_uid=uid)
