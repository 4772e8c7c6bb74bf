"""The quotas app's signal receivers, connected by `quotas.apps.QuotasConfig.ready()` (docs/architecture.md,
"Reactions across apps"). Each runs in the sender's transaction (`workflow_finished` after commit), so what it
writes commits or rolls back with it. Imports are lazy: this module is imported while the apps load.
"""

from __future__ import annotations


def workflow_finished(sender, *, workflow_pk, **kwargs) -> None:
    """A workflow finished (after commit): its capacity is free in each node pool it was charged to; admit what
    waits there."""
    from quotas.services.admission_passes import request_passes
    from workflows.models import WorkflowPart, WorkflowStatus

    mine = WorkflowPart.objects.filter(workflow_id=workflow_pk).values("node_pool")
    request_passes(
        WorkflowPart.objects.filter(
            node_pool__in=mine, workflow__status=WorkflowStatus.QUEUED, admitted_at__isnull=True
        )
    )


def nodes_changed(sender, *, backend_id, names, nodes=None, previous=None, generation=None, **kwargs) -> None:
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


def membership_changed(sender, *, backend_ids, node_ids=None, **kwargs) -> None:
    """Nodes changed platforms: platform node pools follow, and so does which node pool a platform is charged to."""
    from quotas.services import charge_cache, membership

    charge_cache.changed()
    for backend_id in backend_ids:
        membership.recompute(backend_id, node_ids, platform_change=True)


def platform_deleted(sender, instance, **kwargs) -> None:
    """A platform went (its pool's config, or the pool deleted): its nodes leave a platform node pool."""
    from pools.models import Pool
    from quotas.models import NodePool
    from quotas.services import charge_cache, membership

    charge_cache.changed()
    backend_id = Pool.objects.filter(pk=instance.pool_id).values_list("backend_id", flat=True).first()
    if backend_id is not None and NodePool.objects.filter(backend_id=backend_id, selector_kind="platform").exists():
        membership.recompute(backend_id)


def node_pool_deleted(sender, instance, **kwargs) -> None:
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


def backend_saving(sender, instance, raw=False, **kwargs) -> None:
    """Remember what the scheduler objects depend on, to tell after the save whether they must follow."""
    if raw or instance.pk is None:
        return
    instance._delegation_before = (
        sender.objects.filter(pk=instance.pk).values_list("quota_scheduler", "namespace", "name").first()
    )


def backend_saved(sender, instance, created, raw=False, **kwargs) -> None:
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


def team_saved(sender, instance, created, raw=False, **kwargs) -> None:
    """A new department or project gets the zero quota in every node pool."""
    if not raw:
        from quotas.services import charge_cache

        charge_cache.changed()
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


def team_deleted(sender, instance, **kwargs) -> None:
    """A department or project gone (its quota rows with it): its queues go from every delegating backend."""
    from quotas.services import charge_cache
    from quotas.services.delegation import schedule_all

    charge_cache.changed()
    schedule_all()
