from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from access import actions, policy
        from clusters.signals import machine_pool_changed, nodes_changed
        from configs import registry
        from pools.models import Platform, Pool
        from pools.services.config_handlers import CONFIG_TYPES

        # A pool's owners (guardian permission pools.change_pool on that pool) read and edit that pool's
        # config, and only that pool's, without an admin role (granted on the pool's admin page).
        owner = (actions.CONFIG_READ, actions.CONFIG_UPDATE)
        policy.register_object_right(Pool, "pools.change_pool", owner, label="owner")
        policy.register_object_right(Platform, "pools.change_pool", owner, via="pool", label="owner")
        nodes_changed.connect(recompute_membership, dispatch_uid="pools.membership")
        machine_pool_changed.connect(follow_machine_pool, dispatch_uid="pools.machine_pool_platforms")
        registry.register(*CONFIG_TYPES)  # POOL, POD_TEMPLATE, RESOURCE_VALIDATION


def recompute_membership(sender, **kwargs) -> None:
    """The inventory changed nodes: their membership, in the inventory's transaction (`clusters.signals`)."""
    from pools.services import membership  # the placement engine: imported when nodes change, not at start-up

    membership.nodes_changed(**kwargs)


# Saves that touch only these (the provider's status) cannot change a machine pool's template.
_STATUS_FIELDS = frozenset(
    {"state", "provider_id", "nodes_now", "nodes_ready", "last_answer", "last_answer_at", "attempts", "updated_at"}
)


def follow_machine_pool(sender, machine_pool, update_fields=None, **kwargs) -> None:
    """A machine pool was saved: a new revision of the template of its platform if its taints moved it."""
    if update_fields is not None and set(update_fields) <= _STATUS_FIELDS:
        return
    from pools.services.machine_pool_platforms import follow_machine_pool as follow

    follow(machine_pool)
