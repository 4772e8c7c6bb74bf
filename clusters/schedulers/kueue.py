"""QuotaTree -> Kueue objects (kueue.x-k8s.io/v1beta1).

* a `ResourceFlavor` per node pool (cluster-scoped): `nodeLabels` = the node pool's label selector; a node
  pool chosen by node names gets `pool-portal/node-pool=<name>`, which its nodes must carry; the Default
  node pool has none (any node);
* a `ClusterQueue` per project (cluster-scoped) in the cohort of its department: one resource group
  covering cpu, memory and nvidia.com/gpu, one flavor per node pool, `nominalQuota` = deserved and
  `borrowingLimit` = limit − deserved (none when there is no limit; 0 where the node pool's over-quota is
  off). Unused nominal quota is lent to the cohort (no `lendingLimit`), and a project under its nominal
  quota reclaims it from borrowers (`preemption.reclaimWithinCohort: Any`), as in the portal. Only the
  backend's namespace may use it;
* a `LocalQueue` per project in the backend's namespace, pointing at its ClusterQueue; pods name it in the
  `kueue.x-k8s.io/queue-name` label.

What Kueue v1beta1 cannot say: a department's own quota (a cohort is only a name; its capacity is the sum
of its ClusterQueues' nominal quotas), borrowing across departments, and a weight per node pool and
resource (`fairSharing.weight` is one number per ClusterQueue: set only when all of a project's weights
agree). Project priority belongs to workloads in Kueue (WorkloadPriorityClass), not to queues.
"""

from __future__ import annotations

from clusters.schedulers.errors import TranslationError
from clusters.schedulers.tree import (
    RESOURCES,
    Department,
    NodePool,
    Project,
    QuotaTree,
    managed_labels,
    object_name,
    quota_of,
)

API_VERSION = "kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
NODE_POOL_LABEL = "pool-portal/node-pool"
RESOURCE_NAMES = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}
COVERED = ("cpu", "memory", "gpu")  # every flavor lists its resources in this order


def local_queue_name(project: str) -> str:
    return object_name(project)


def objects(tree: QuotaTree) -> list[dict]:
    """Flavors, then ClusterQueues, then LocalQueues: the order to apply them in."""
    return [*resource_flavors(tree), *cluster_queues(tree), *local_queues(tree)]


def resource_flavors(tree: QuotaTree) -> list[dict]:
    names: dict[str, str] = {}
    flavors = []
    for pool in tree.node_pools:
        spec = {"nodeLabels": dict(_node_labels(pool))} if _node_labels(pool) else {}
        flavor = _object("ResourceFlavor", _unique(names, object_name(pool.name), f"node pool {pool.name}"), tree)
        flavors.append({**flavor, "spec": spec})
    return flavors


def _node_labels(pool: NodePool) -> dict[str, str]:
    if pool.node_labels:
        return dict(pool.node_labels)
    if not pool.default:  # chosen by node names (a platform's members): even before it has any
        return {NODE_POOL_LABEL: object_name(pool.name)}
    return {}


def cluster_queues(tree: QuotaTree) -> list[dict]:
    names: dict[str, str] = {}
    queues = []
    for department in tree.departments:
        for project in department.projects:
            name = _unique(names, object_name(project.name), f"project {project.name}")
            queues.append(
                {**_object("ClusterQueue", name, tree), "spec": _cluster_queue_spec(tree, department, project)}
            )
    return queues


def _cluster_queue_spec(tree: QuotaTree, department: Department, project: Project) -> dict:
    spec: dict = {
        "cohort": object_name(department.name),
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tree.namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "reclaimWithinCohort": "Any",
            "withinClusterQueue": "LowerPriority",
            "borrowWithinCohort": {"policy": "Never"},
        },
    }
    if tree.node_pools:
        spec["resourceGroups"] = [
            {
                "coveredResources": [RESOURCE_NAMES[r] for r in COVERED],
                "flavors": [
                    {"name": object_name(pool.name), "resources": [_quota(pool, project, r) for r in COVERED]}
                    for pool in tree.node_pools
                ],
            }
        ]
    weights = {quota_of(project, pool.name, r).weight for pool in tree.node_pools for r in RESOURCES}
    if len(weights) == 1:
        spec["fairSharing"] = {"weight": weights.pop()}
    return spec


def _quota(pool: NodePool, project: Project, resource: str) -> dict:
    quota = quota_of(project, pool.name, resource)
    entry: dict = {"name": RESOURCE_NAMES[resource], "nominalQuota": _quantity(resource, quota.deserved)}
    if not pool.over_quota:
        entry["borrowingLimit"] = 0
    elif quota.limit is not None:
        entry["borrowingLimit"] = _quantity(resource, quota.limit - quota.deserved)
    return entry


_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _quantity(resource: str, value: int) -> int | str:
    """A Kubernetes quantity as a person would write it: cpu millicores as whole CPUs when exact ("500m"
    otherwise), memory bytes with the largest binary suffix that divides them ("512Gi"), GPUs as counts."""
    if resource == "cpu":
        return value // 1000 if value % 1000 == 0 else f"{value}m"
    if resource == "memory" and value:
        suffix, factor = next(((s, f) for s, f in _BINARY if value % f == 0), ("", 1))
        return f"{value // factor}{suffix}" if suffix else value
    return value


def local_queues(tree: QuotaTree) -> list[dict]:
    queues = []
    for department in tree.departments:
        for project in department.projects:
            queue = _object("LocalQueue", local_queue_name(project.name), tree)
            queue["metadata"]["namespace"] = tree.namespace
            queues.append({**queue, "spec": {"clusterQueue": object_name(project.name)}})
    return queues


def _object(kind: str, name: str, tree: QuotaTree) -> dict:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "labels": managed_labels(tree)}}


def _unique(names: dict[str, str], name: str, origin: str) -> str:
    if name in names:
        raise TranslationError(
            f"{origin} and {names[name]} would both be the Kueue object {name!r}: rename one of them",
            field="name",
            value=name,
        )
    names[name] = origin
    return name
