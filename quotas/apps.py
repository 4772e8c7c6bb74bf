"""The quotas app's wiring: `ready()` registers its config type and connects or installs, one line each, the
receivers (quotas.receivers), the listener, and the hooks it gives lower apps (the admission gate,
quotas.services.gate; docs/architecture.md, "Reactions across apps"), all by dotted path (portal.lazy), so
that none of the services behind them is imported at start-up. Nothing else lives here."""

from django.apps import AppConfig


class QuotasConfig(AppConfig):
    """Node pools, team quotas, admission and delegation to KAI/Kueue: the layer above workflows (docs/quotas.md)."""

    name = "quotas"
    verbose_name = "Quotas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_save

        from clusters.machinepools import node_labels as machine_pool_node_labels
        from clusters.models import Backend
        from clusters.signals import nodes_changed, nodes_deleted
        from configs import registry, revisions
        from pools import confinement, platform_checks
        from pools.models import Platform
        from pools.signals import membership_changed
        from portal import lazy
        from quotas.models import NodePool
        from teams.models import Department, Project
        from workflows import admission_gate
        from workflows.signals import workflow_finished

        on, deleted, saved = lazy.connect, post_delete, post_save  # one receiver a line, by path
        registry.register("NODE_POOL", "quotas.config_handlers.NodePoolHandler")
        # the cached charges (quotas.services.charge_cache)
        listener = lazy.function("quotas.services.charge_cache.config_written")
        if listener not in revisions.LISTENERS:
            revisions.LISTENERS.append(listener)
        on(nodes_deleted, "quotas.services.charge_cache.changed", dispatch_uid="quotas.nodes_deleted")
        on(nodes_changed, "quotas.receivers.nodes_changed", dispatch_uid="quotas.nodes_changed")
        on(membership_changed, "quotas.receivers.membership_changed", dispatch_uid="quotas.membership_changed")
        on(deleted, "quotas.receivers.platform_deleted", sender=Platform, dispatch_uid="quotas.platform_deleted")
        on(deleted, "quotas.receivers.node_pool_deleted", sender=NodePool, dispatch_uid="quotas.node_pool_deleted")
        on(saved, "quotas.receivers.backend_saved", sender=Backend, dispatch_uid="quotas.backend_saved")
        on(saved, "quotas.receivers.team_saved", sender=Department, dispatch_uid="quotas.department_saved")
        on(saved, "quotas.receivers.team_saved", sender=Project, dispatch_uid="quotas.project_saved")
        on(deleted, "quotas.receivers.team_deleted", sender=Department, dispatch_uid="quotas.department_deleted")
        on(deleted, "quotas.receivers.team_deleted", sender=Project, dispatch_uid="quotas.project_deleted")
        on(pre_save, "quotas.receivers.backend_saving", sender=Backend, dispatch_uid="quotas.backend_saving")
        on(workflow_finished, "quotas.receivers.workflow_finished", dispatch_uid="quotas.workflow_finished")
        admission_gate.register(lazy.instance("quotas.services.gate.AdmissionGate"))
        # a machine pool's new nodes come up with the node-pool label its confined pods select (quotas.md)
        machine_pool_node_labels.install(lazy.function("quotas.services.charge_cache.machine_pool_node_labels"))
        # a platform contradicting its node pool is refused at save
        platform_checks.register(lazy.function("quotas.services.confinement_checks.check_pools"))
        # the placement command and the admin's preview show confinement
        confinement.install(lazy.instance("quotas.services.confiner.PortalConfiner"))
