from django.apps import AppConfig


class ConfigsConfig(AppConfig):
    """The config store: config types, revisions and the one write path every door uses."""

    name = "configs"
    verbose_name = "Configuration"
    default_auto_field = "django.db.models.BigAutoField"
