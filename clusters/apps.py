from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from clusters.models import MachinePool
        from configs import registry
        from portal import lazy

        registry.register("BACKEND", "clusters.config_handlers.BackendHandler")
        registry.register("MACHINE_POOL", "clusters.config_handlers.MachinePoolHandler")
        # A saved or deleted machine pool is put in step with its provider once the write commits (the
        # providers' code loads with the first such write: portal.lazy), and any save, whatever the door, is
        # announced to the apps above (clusters.signals).
        for signal, verb in ((post_save, "saved"), (post_delete, "deleted")):
            lazy.connect(
                signal,
                "clusters.machinepools.reconcile.machine_pool_changed",
                sender=MachinePool,
                dispatch_uid=f"clusters.machine_pool_{verb}",
            )
        post_save.connect(announce_machine_pool, sender=MachinePool, dispatch_uid="clusters.machine_pool_changed")


def announce_machine_pool(sender, instance, created, update_fields=None, **kwargs) -> None:
    """Any save of a machine pool, whatever the door: the apps above hear it (`clusters.signals`)."""
    from clusters.signals import machine_pool_changed

    machine_pool_changed.send(sender, machine_pool=instance, created=created, update_fields=update_fields)
