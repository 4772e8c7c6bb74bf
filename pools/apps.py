from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from access import actions, policy
        from pools.models import Pool

        # A pool's owners (guardian permission pools.change_pool on that pool) read and edit that pool's
        # config, and only that pool's, without an admin role (granted on the pool's admin page).
        policy.register_object_right(Pool, "pools.change_pool", (actions.CONFIG_READ, actions.CONFIG_UPDATE),
                                     label="owner")
