from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from pools import platform_use
        from portal import lazy

        # a platform removed with its machine pool asks (workflows.queries: imported then, portal.lazy)
        platform_use.register(lazy.function("workflows.queries.unfinished_on_platforms"))
