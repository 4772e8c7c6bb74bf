"""The quotas app's wiring: `ready()` registers its config type and connects or installs, one line each, the
receivers (quotas.receivers), the listener, and the hooks it gives lower apps (the admission gate,
quotas.services.gate; docs/architecture.md, "Reactions across apps"). Nothing else lives here."""

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
        from quotas import receivers
        from quotas.config_handlers import CONFIG_TYPES
        from quotas.models import NodePool
        from quotas.services import charge_cache
        from quotas.services.confinement_checks import check_pools
        from quotas.services.confiner import PortalConfiner
        from quotas.services.gate import AdmissionGate
        from teams.models import Department, Project
        from workflows import admission_gate
        from workflows.signals import workflow_finished

        registry.register(*CONFIG_TYPES)  # NODE_POOL
        if charge_cache.config_written not in revisions.LISTENERS:  # the cached charges (quotas.services.charge_cache)
            revisions.LISTENERS.append(charge_cache.config_written)
        nodes_deleted.connect(charge_cache.changed, dispatch_uid="quotas.nodes_deleted")
        nodes_changed.connect(receivers.nodes_changed, dispatch_uid="quotas.nodes_changed")
        membership_changed.connect(receivers.membership_changed, dispatch_uid="quotas.membership_changed")
        post_delete.connect(receivers.platform_deleted, sender=Platform, dispatch_uid="quotas.platform_deleted")
        post_delete.connect(receivers.node_pool_deleted, sender=NodePool, dispatch_uid="quotas.node_pool_deleted")
        post_save.connect(receivers.backend_saved, sender=Backend, dispatch_uid="quotas.backend_saved")
        post_save.connect(receivers.team_saved, sender=Department, dispatch_uid="quotas.department_saved")
        post_save.connect(receivers.team_saved, sender=Project, dispatch_uid="quotas.project_saved")
        post_delete.connect(receivers.team_deleted, sender=Department, dispatch_uid="quotas.department_deleted")
        post_delete.connect(receivers.team_deleted, sender=Project, dispatch_uid="quotas.project_deleted")
        pre_save.connect(receivers.backend_saving, sender=Backend, dispatch_uid="quotas.backend_saving")
        workflow_finished.connect(receivers.workflow_finished, dispatch_uid="quotas.workflow_finished")
        admission_gate.register(AdmissionGate())
        # a machine pool's new nodes come up with the node-pool label its confined pods select (quotas.md)
        machine_pool_node_labels.install(charge_cache.machine_pool_node_labels)
        platform_checks.register(check_pools)  # a platform contradicting its node pool is refused at save
        confinement.install(PortalConfiner())  # the placement command and the admin's preview show confinement
