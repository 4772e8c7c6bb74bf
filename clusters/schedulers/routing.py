"""Which scheduler a pod goes to and the labels that put it in its queue, per `Backend.quota_scheduler`."""

from __future__ import annotations

from clusters.schedulers import kai, kueue
from clusters.schedulers.errors import TranslationError
from clusters.schedulers.tree import NodePool

SCHEDULERS = ("portal", "kai", "kueue")
DELEGATING = ("kai", "kueue")  # the quota schedulers that admit and preempt in the portal's place
DEFAULT_NODE_POOL_SUFFIX = "-default"  # a backend's Default node pool is `<backend>-default` (quotas.models)


def default_node_pool_name(backend_name: str) -> str:
    return f"{backend_name}{DEFAULT_NODE_POOL_SUFFIX}"


def pod_routing(
    scheduler: str, project: str | None, node_pool: NodePool | None = None, *, scheduler_name: str = ""
) -> tuple[str, dict[str, str]]:
    """(spec.schedulerName, labels) for a pod charged to `project` in `node_pool`.

    `scheduler_name`: the backend's own `scheduler_name`, which wins when set (a KAI installed under
    another name); empty means the scheduler's usual name: `kai-scheduler` for KAI, the cluster's default
    ("") for the portal and for Kueue, which gates pods in its webhook and lets the default scheduler bind.
    """
    if scheduler not in SCHEDULERS:
        raise TranslationError(f"must be one of {', '.join(SCHEDULERS)}", field="quota_scheduler", value=scheduler)
    if scheduler == "portal":
        return scheduler_name, {}
    if not project:
        raise TranslationError(
            f"a workload on a backend whose quotas {scheduler} enforces must be charged to a project "
            "(its queue is the project's)",
            field="project",
            value=project,
        )
    if scheduler == "kai":
        labels = {kai.QUEUE_LABEL: kai.queue_name(project, node_pool), **kai.node_pool_labels(node_pool)}
        return scheduler_name or kai.SCHEDULER_NAME, labels
    return scheduler_name, {kueue.QUEUE_LABEL: kueue.local_queue_name(project)}


def workload_routing(backend, project: str | None, node_pool: str) -> tuple[str, dict[str, str]]:
    """`pod_routing` for a workload of `backend` (anything with name, quota_scheduler, scheduler_name)
    charged to `project` in the node pool named `node_pool`: what pod creation needs, from names alone
    (workflows records the charged node pool's name). "" or the backend's Default node pool name is the
    Default (KAI's default shard)."""
    scheduler = getattr(backend, "quota_scheduler", "") or "portal"
    if not node_pool or node_pool == default_node_pool_name(backend.name):
        pool = NodePool(node_pool or default_node_pool_name(backend.name), default=True)
    else:
        pool = NodePool(node_pool)
    return pod_routing(scheduler, project, pool, scheduler_name=backend.scheduler_name)
