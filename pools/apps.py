from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from clusters.signals import nodes_changed

        nodes_changed.connect(recompute_membership, dispatch_uid="pools.membership")


def recompute_membership(sender, **kwargs) -> None:
    """The inventory changed nodes: their membership, in the inventory's transaction (`clusters.signals`)."""
    from pools.services import membership  # the placement engine: imported when nodes change, not at start-up

    membership.nodes_changed(**kwargs)
