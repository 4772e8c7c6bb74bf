from django.apps import AppConfig


class ConfigsConfig(AppConfig):
    """The config store: config types, revisions and the one write path every door uses."""

    name = "configs"
    verbose_name = "Configuration"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks

        from configs import registry
        from portal import lazy

        # every handler, companion, receiver and hook wired by path imports (`manage.py check`)
        checks.register(registry.check_registry)
        checks.register(lazy.check_paths)
