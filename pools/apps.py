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
        _cache_would_be_nodes()
        machine_pool_changed.connect(follow_machine_pool, dispatch_uid="pools.machine_pool_platforms")
        registry.register(*CONFIG_TYPES)  # POOL, POD_TEMPLATE, RESOURCE_VALIDATION
        # Deleting a machine pool (clusters' type) takes the platform and pod template made for it, from any door.
        # A rollback that makes one again puts them back (pools.services.machine_pool_restore).
        from pools.services.machine_pool_restore import MachinePoolCompanions

        registry.install_companions("MACHINE_POOL", MachinePoolCompanions())


def _cache_would_be_nodes() -> None:
    """The writes that make cached would-be nodes stale (pools.services.machine_pool_shapes)."""
    from django.db.models.signals import post_delete, post_save

    from clusters.models import InstanceType, MachinePool
    from clusters.signals import nodes_changed, nodes_deleted
    from configs import revisions
    from pools.services import machine_pool_shapes as shapes
    from pools.signals import membership_changed

    if shapes.config_written not in revisions.LISTENERS:
        revisions.LISTENERS.append(shapes.config_written)
    for model in (MachinePool, InstanceType):
        for verb, signal in (("saved", post_save), ("deleted", post_delete)):
            signal.connect(shapes.changed, sender=model, dispatch_uid=f"pools.would_be.{model.__name__}.{verb}")
    membership_changed.connect(shapes.changed, dispatch_uid="pools.would_be.membership")
    nodes_deleted.connect(shapes.changed, dispatch_uid="pools.would_be.nodes_deleted")
    nodes_changed.connect(shapes.nodes_written, dispatch_uid="pools.would_be.nodes_changed")


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
