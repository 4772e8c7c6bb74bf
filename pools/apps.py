from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from access import actions, policy
        from pools.models import Platform, Pool

        # A pool's owners (guardian permission pools.change_pool on that pool) read and edit that pool's
        # config, and only that pool's, without an admin role (granted on the pool's admin page).
        owner = (actions.CONFIG_READ, actions.CONFIG_UPDATE)
        policy.register_object_right(Pool, "pools.change_pool", owner, label="owner")
        policy.register_object_right(Platform, "pools.change_pool", owner, via="pool", label="owner")
