from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clusters.config_handlers import CONFIG_TYPES
        from configs import registry

        registry.register(*CONFIG_TYPES)  # BACKEND, MACHINE_POOL
        from django.db.models.signals import post_delete, post_save

        from clusters.machinepools.reconcile import machine_pool_changed
        from clusters.models import MachinePool

        # A saved or deleted machine pool is put in step with its provider once the write commits.
        post_save.connect(machine_pool_changed, sender=MachinePool, dispatch_uid="clusters.machine_pool_saved")
        post_delete.connect(machine_pool_changed, sender=MachinePool, dispatch_uid="clusters.machine_pool_deleted")
