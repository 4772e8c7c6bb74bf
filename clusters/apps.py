from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from clusters.config_handlers import CONFIG_TYPES
        from clusters.models import MachinePool
        from configs import registry

        registry.register(*CONFIG_TYPES)  # BACKEND
        post_save.connect(announce_machine_pool, sender=MachinePool, dispatch_uid="clusters.machine_pool_changed")


def announce_machine_pool(sender, instance, created, update_fields=None, **kwargs) -> None:
    """Any save of a machine pool, whatever the door: the apps above hear it (`clusters.signals`)."""
    from clusters.signals import machine_pool_changed

    machine_pool_changed.send(sender, machine_pool=instance, created=created, update_fields=update_fields)
