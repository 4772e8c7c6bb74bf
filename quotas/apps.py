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
        from pools.models import Platform
        from pools.signals import membership_changed
        from quotas.config_handlers import CONFIG_TYPES
        from quotas.models import NodePool
        from quotas.services import charging
        from teams.models import Department, Project
        from workflows import admission_gate
        from workflows.signals import workflow_finished

        registry.register(*CONFIG_TYPES)  # NODE_POOL
        if charging.config_written not in revisions.LISTENERS:  # the cached charges (quotas.services.charging)
            revisions.LISTENERS.append(charging.config_written)
        nodes_deleted.connect(charging.changed, dispatch_uid="quotas.nodes_deleted")
        nodes_changed.connect(_nodes_changed, dispatch_uid="quotas.nodes_changed")
        membership_changed.connect(_membership_changed, dispatch_uid="quotas.membership_changed")
        post_delete.connect(_platform_deleted, sender=Platform, dispatch_uid="quotas.platform_deleted")
        post_delete.connect(_node_pool_deleted, sender=NodePool, dispatch_uid="quotas.node_pool_deleted")
        post_save.connect(_backend_saved, sender=Backend, dispatch_uid="quotas.backend_saved")
        post_save.connect(_team_saved, sender=Department, dispatch_uid="quotas.department_saved")
        post_save.connect(_team_saved, sender=Project, dispatch_uid="quotas.project_saved")
        post_delete.connect(_team_deleted, sender=Department, dispatch_uid="quotas.department_deleted")
        post_delete.connect(_team_deleted, sender=Project, dispatch_uid="quotas.project_deleted")
        pre_save.connect(_backend_saving, sender=Backend, dispatch_uid="quotas.backend_saving")
        admission_gate.register(AdmissionGate())
        # a machine pool's new nodes come up with the node-pool label its confined pods select (quotas.md)
        machine_pool_node_labels.install(charging.machine_pool_node_labels)
        from pools import platform_checks
        from quotas.services.confinement_checks import check_pools

        platform_checks.register(check_pools)  # a platform contradicting its node pool is refused at save
        from pools import confinement
        from quotas.services.confiner import PortalConfiner

        confinement.install(PortalConfiner())  # the placement command and the admin's preview show confinement
        workflow_finished.connect(_workflow_finished, dispatch_uid="quotas.workflow_finished")


class AdmissionGate:
    """What workflows asks at submission (workflows.admission_gate): the node pool a workflow is charged to,
    and whether it waits QUEUED for admission (a managed node pool) or is admitted at once (docs/admission.md):
    unmanaged, or on a backend whose own scheduler (KAI, Kueue) admits (docs/quota-schedulers.md)."""

    def charge(self, workflow, platform: str):
        from quotas.services import charging
        from workflows.admission_gate import Charge

        node_pool, queue, selector = charging.charge(workflow.pool, platform)  # cached per process (charging epoch)
        return Charge(node_pool, queue=queue, node_selector=selector)

    def checker(self, workflow, node_pools: set[str]):
        from quotas.services.fit import checker

        return checker(workflow.pool.backend_id, workflow.project, node_pools).refuse

    def on_queued(self, workflow_pks: list[int]) -> None:
        from quotas.services.admission import request_passes
        from workflows.models import WorkflowPart

        request_passes(WorkflowPart.objects.filter(workflow_id__in=workflow_pks, admitted_at__isnull=True))

    def scheduler_says(self, workflow) -> dict | None:
        """A delegated workflow not running yet: what KAI or Kueue says of its queue (docs/quota-schedulers.md)."""
        from quotas.services.scheduler_status import scheduler_says

        return scheduler_says(workflow)


def _workflow_finished(sender, *, workflow_pk, **kwargs) -> None:
    """A workflow finished (after commit): its capacity is free in each node pool it was charged to; admit what
    waits there."""
    from quotas.services.admission import request_passes
    from workflows.models import WorkflowPart, WorkflowStatus

    mine = WorkflowPart.objects.filter(workflow_id=workflow_pk).values("node_pool")
    request_passes(
        WorkflowPart.objects.filter(
            node_pool__in=mine, workflow__status=WorkflowStatus.QUEUED, admitted_at__isnull=True
        )
    )


# Receivers: each runs in the sender's transaction, so what it writes commits or rolls back with it.


def _nodes_changed(sender, *, backend_id, names, nodes=None, previous=None, generation=None, **kwargs) -> None:
    """The inventory wrote nodes (new ones, or labels changed): their node pool. With `previous` (watch events),
    only new nodes and nodes whose labels read by a label node pool changed; with `generation`, the node pools
    read under it may come from the cache."""
    from clusters.models import Node
    from clusters.signals import ALL
    from quotas.services import membership

    if names == ALL:
        membership.recompute(backend_id)
    elif nodes is not None:
        before = None
        if previous is not None:
            before = {node.pk: previous[node.name]["labels"] for node in nodes if node.name in previous}
        labels = {node.pk: node.labels for node in nodes}
        membership.recompute(backend_id, labels=labels, previous=before, generation=generation)
    else:
        written = Node.objects.filter(backend_id=backend_id, name__in=names).values_list("pk", flat=True)
        membership.recompute(backend_id, list(written))


def _membership_changed(sender, *, backend_ids, node_ids=None, **kwargs) -> None:
    """Nodes changed platforms: platform node pools follow, and so does which node pool a platform is charged to."""
    from quotas.services import charging, membership

    charging.changed()
    for backend_id in backend_ids:
        membership.recompute(backend_id, node_ids, platform_change=True)


def _platform_deleted(sender, instance, **kwargs) -> None:
    """A platform went (its pool's config, or the pool deleted): its nodes leave a platform node pool."""
    from pools.models import Pool
    from quotas.models import NodePool
    from quotas.services import charging, membership

    charging.changed()
    backend_id = Pool.objects.filter(pk=instance.pool_id).values_list("backend_id", flat=True).first()
    if backend_id is not None and NodePool.objects.filter(backend_id=backend_id, selector_kind="platform").exists():
        membership.recompute(backend_id)


def _node_pool_deleted(sender, instance, **kwargs) -> None:
    """A node pool deleted through the store: its nodes go back to the others. The Default goes only with its
    backend: record that in its history (the store did not delete it)."""
    from clusters.models import Backend
    from configs import revisions
    from configs.models import ConfigType
    from quotas.services import membership

    if instance.is_default:
        from access.services.audit import SYSTEM

        revisions.record(
            ConfigType.NODE_POOL, instance.name, None, SYSTEM, deleted=True, description="its backend was deleted"
        )
    elif Backend.objects.filter(pk=instance.backend_id).exists():
        membership.recompute(instance.backend_id)
        from quotas.services.delegation import schedule_sync

        schedule_sync(instance.backend_id)  # its KAI queues or Kueue flavor go


def _backend_saving(sender, instance, raw=False, **kwargs) -> None:
    """Remember what the scheduler objects depend on, to tell after the save whether they must follow."""
    if raw or instance.pk is None:
        return
    instance._delegation_before = (
        sender.objects.filter(pk=instance.pk).values_list("quota_scheduler", "namespace", "name").first()
    )


def _backend_saved(sender, instance, created, raw=False, **kwargs) -> None:
    """Every backend has its Default node pool from its first moment. A backend that starts or stops delegating
    to KAI or Kueue (or moves namespace) has its scheduler objects written or removed after commit."""
    if raw:
        return
    from quotas.services.delegation import schedule_sync

    if created:
        from quotas.services.node_pools import ensure_default

        ensure_default(instance)
        schedule_sync(instance.pk)
        return
    before = getattr(instance, "_delegation_before", None)
    if before is not None and before != (instance.quota_scheduler, instance.namespace, instance.name):
        schedule_sync(instance.pk, even_if_portal=before[0] != instance.quota_scheduler)


def _team_saved(sender, instance, created, raw=False, **kwargs) -> None:
    """A new department or project gets the zero quota in every node pool."""
    if not raw:
        from quotas.services import charging

        charging.changed()
    if created and not raw:
        from quotas.services.quotas import give_zero_quotas
        from teams.models import Department

        if isinstance(instance, Department):
            give_zero_quotas(department=instance)
        else:
            give_zero_quotas(project=instance)
    if not raw:  # new, renamed or reprioritised: every delegating backend's queues follow
        from quotas.services.delegation import schedule_all

        schedule_all()


def _team_deleted(sender, instance, **kwargs) -> None:
    """A department or project gone (its quota rows with it): its queues go from every delegating backend."""
    from quotas.services import charging
    from quotas.services.delegation import schedule_all

    charging.changed()
    schedule_all()
