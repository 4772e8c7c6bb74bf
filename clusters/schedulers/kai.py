"""QuotaTree -> KAI-Scheduler `Queue`s (scheduling.run.ai/v2, cluster-scoped).

Per node pool, a two-level tree: one parent queue per department, one leaf queue per project under it
(`spec.parentQueue`). Each carries `spec.resources.{gpu,cpu,memory}` = {quota: deserved, limit (-1 = none),
overQuotaWeight: weight}; a project's queue carries `spec.priority` = 100 (KAI's default) + the project's
priority, so over-quota resources go to higher-priority projects first, as in the portal.

Node pools are KAI scheduling shards: a shard schedules the nodes, queues and pod groups labelled
`kai.scheduler/node-pool=<its partitionLabelValue>` (KAI's default nodePoolLabelKey). The backend's Default
node pool is the default shard: its queues are unlabelled and named after the department or project; any
other node pool's queues are labelled with the node pool and named `<node pool>-<team>`.

Units (the CRD's descriptions): gpu in devices, cpu in millicpus, memory in megabytes (10^6 bytes).
A node pool with over-quota off gives every queue `overQuotaWeight: 0` and `limit = quota`: nobody borrows.
"""

from __future__ import annotations

from clusters.schedulers.errors import TranslationError
from clusters.schedulers.tree import (
    RESOURCES,
    Department,
    NodePool,
    Project,
    QuotaTree,
    joined_name,
    managed_labels,
    object_name,
    quota_of,
)

API_VERSION = "scheduling.run.ai/v2"
QUEUE_LABEL = "kai.scheduler/queue"  # the pod label naming its queue (was runai/queue before KAI v0.6.0)
NODE_POOL_LABEL = "kai.scheduler/node-pool"
SCHEDULER_NAME = "kai-scheduler"
DEFAULT_PRIORITY = 100
NO_LIMIT = -1


def queue_name(team: str, node_pool: NodePool | None) -> str:
    """The queue of a department or project in a node pool (None or the Default node pool: unprefixed)."""
    if node_pool is None or node_pool.default:
        return object_name(team)
    return joined_name(node_pool.name, team)


def node_pool_labels(node_pool: NodePool | None) -> dict[str, str]:
    """What puts an object (queue, pod) in the node pool's shard; nothing for the default shard."""
    if node_pool is None or node_pool.default:
        return {}
    return {NODE_POOL_LABEL: object_name(node_pool.name)}


def queues(tree: QuotaTree) -> list[dict]:
    """Every Queue of the tree: per node pool, each department then its projects."""
    objects: list[dict] = []
    origins: dict[str, str] = {}
    for pool in tree.node_pools:
        for department in tree.departments:
            parent = _queue(tree, pool, department, None)
            objects.append(_claim(origins, parent, f"department {department.name} in node pool {pool.name}"))
            for project in department.projects:
                leaf = _queue(tree, pool, project, parent["metadata"]["name"])
                objects.append(_claim(origins, leaf, f"project {project.name} in node pool {pool.name}"))
    return objects


def _queue(tree: QuotaTree, pool: NodePool, team: Department | Project, parent: str | None) -> dict:
    spec: dict = {"displayName": team.name}
    if parent is not None:
        spec["parentQueue"] = parent
    if isinstance(team, Project):
        spec["priority"] = DEFAULT_PRIORITY + team.priority
    spec["resources"] = {resource: _resource(pool, team, resource) for resource in RESOURCES}
    return {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "metadata": {
            "name": queue_name(team.name, pool),
            "labels": {**managed_labels(tree), **node_pool_labels(pool)},
        },
        "spec": spec,
    }


def _resource(pool: NodePool, team: Department | Project, resource: str) -> dict:
    quota = quota_of(team, pool.name, resource)
    deserved = _kai_units(resource, quota.deserved)
    if not pool.over_quota:
        return {"quota": deserved, "limit": deserved, "overQuotaWeight": 0}
    limit = NO_LIMIT if quota.limit is None else _kai_units(resource, quota.limit)
    return {"quota": deserved, "limit": limit, "overQuotaWeight": quota.weight}


def _kai_units(resource: str, value: int) -> int | float:
    if resource != "memory":
        return value
    whole, rest = divmod(value, 1_000_000)
    return whole if not rest else value / 1_000_000


def _claim(origins: dict[str, str], obj: dict, origin: str) -> dict:
    name = obj["metadata"]["name"]
    if name in origins:
        raise TranslationError(
            f"{origin} and {origins[name]} would both be the KAI queue {name!r}: rename one of them",
            field="name",
            value=name,
        )
    origins[name] = origin
    return obj
