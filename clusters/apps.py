from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from clusters.config_handlers import CONFIG_TYPES
        from clusters.models import MachinePool
        from configs import registry

        registry.register(*CONFIG_TYPES)  # BACKEND, MACHINE_POOL
        from clusters.machinepools.reconcile import machine_pool_changed

        # A saved or deleted machine pool is put in step with its provider once the write commits, and any
        # save, whatever the door, is announced to the apps above (clusters.signals).
        post_save.connect(machine_pool_changed, sender=MachinePool, dispatch_uid="clusters.machine_pool_saved")
        post_delete.connect(machine_pool_changed, sender=MachinePool, dispatch_uid="clusters.machine_pool_deleted")
        post_save.connect(announce_machine_pool, sender=MachinePool, dispatch_uid="clusters.machine_pool_changed")


def announce_machine_pool(sender, instance, created, update_fields=None, **kwargs) -> None:
    """Any save of a machine pool, whatever the door: the apps above hear it (`clusters.signals`)."""
    from clusters.signals import machine_pool_changed

    machine_pool_changed.send(sender, machine_pool=instance, created=created, update_fields=update_fields)
