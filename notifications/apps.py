"""The notifications app's wiring: `ready()` connects its receiver (notifications.receivers), one line. Nothing
else lives here."""

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """Email and Slack messages about a user's workflows (docs/self-service.md, "Notifications"); above quotas."""

    name = "notifications"
    verbose_name = "Notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from notifications import receivers
        from workflows.signals import workflow_finished

        workflow_finished.connect(receivers.workflow_finished, dispatch_uid="notifications.workflow_finished")
