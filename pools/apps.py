from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from access import actions, policy
        from clusters.signals import machine_pool_changed, nodes_changed
        from configs import registry
        from pools.models import Platform, Pool

        # A pool's owners (guardian permission pools.change_pool on that pool) read and edit that pool's
        # config, and only that pool's, without an admin role (granted on the pool's admin page).
        owner = (actions.CONFIG_READ, actions.CONFIG_UPDATE)
        policy.register_object_right(Pool, "pools.change_pool", owner, label="owner")
        policy.register_object_right(Platform, "pools.change_pool", owner, via="pool", label="owner")
        nodes_changed.connect(recompute_membership, dispatch_uid="pools.membership")
        _cache_would_be_nodes()
        machine_pool_changed.connect(follow_machine_pool, dispatch_uid="pools.machine_pool_platforms")
        # imported on first use (configs.registry)
        registry.register("POD_TEMPLATE", "pools.services.config_handlers.PodTemplateHandler")
        registry.register("RESOURCE_VALIDATION", "pools.services.config_handlers.ResourceValidationHandler")
        registry.register("POOL", "pools.services.config_handlers.PoolHandler")
        # Deleting a machine pool (clusters' type) takes the platform and pod template made for it, from any door.
        # A rollback that makes one again puts them back (pools.services.machine_pool_restore).
        registry.install_companions("MACHINE_POOL", "pools.services.machine_pool_restore.MachinePoolCompanions")


def _cache_would_be_nodes() -> None:
    """The writes that make cached would-be nodes stale (pools.services.machine_pool_shapes, which imports
    placement and the template sandbox: wired by path, portal.lazy, it is imported by the first such write)."""
    from django.db.models.signals import post_delete, post_save

    from clusters.models import InstanceType, MachinePool
    from clusters.signals import nodes_changed, nodes_deleted
    from configs import revisions
    from pools.signals import membership_changed
    from portal import lazy

    listener = lazy.function("pools.services.machine_pool_shapes.config_written")
    if listener not in revisions.LISTENERS:
        revisions.LISTENERS.append(listener)
    for model in (MachinePool, InstanceType):
        for verb, signal in (("saved", post_save), ("deleted", post_delete)):
            uid = f"pools.would_be.{model.__name__}.{verb}"
            lazy.connect(signal, "pools.services.machine_pool_shapes.changed", sender=model, dispatch_uid=uid)
    lazy.connect(
        membership_changed, "pools.services.machine_pool_shapes.changed", dispatch_uid="pools.would_be.membership"
    )
    lazy.connect(
        nodes_deleted, "pools.services.machine_pool_shapes.changed", dispatch_uid="pools.would_be.nodes_deleted"
    )
    lazy.connect(
        nodes_changed, "pools.services.machine_pool_shapes.nodes_written", dispatch_uid="pools.would_be.nodes_changed"
    )


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
