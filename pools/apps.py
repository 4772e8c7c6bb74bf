from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from configs import registry
        from pools.services.config_handlers import CONFIG_TYPES

        registry.register(*CONFIG_TYPES)  # POOL, POD_TEMPLATE, RESOURCE_VALIDATION, BACKEND
