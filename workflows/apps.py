from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from pools import platform_use
        from workflows.queries import unfinished_on_platforms

        platform_use.register(unfinished_on_platforms)  # a platform removed with its machine pool asks
