from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clusters.config_handlers import CONFIG_TYPES
        from configs import registry

        registry.register(*CONFIG_TYPES)  # BACKEND, MACHINE_POOL
