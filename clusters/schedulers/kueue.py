"""QuotaTree -> Kueue objects (kueue.x-k8s.io/v1beta1).

* a `ResourceFlavor` per node pool (cluster-scoped): `nodeLabels` = the node pool's label selector; a node
  pool chosen by node names gets `pool-portal/node-pool=<name>`, which its nodes must carry; the Default
  node pool has none (any node);
* a tree of `Cohort`s (hierarchical cohorts, Cohort v1beta1 since Kueue v0.13): one root per backend
  (`<backend>-root`), one Cohort per department under it (`spec.parentName`). One root per backend, not per
  node pool: a project's ClusterQueue covers every node pool (one flavor each) and a ClusterQueue is in one
  cohort only, so the node pools share the tree and the flavors keep them apart (quota of one flavor is
  only ever lent as that flavor). The root's `nominalQuota` is the node pool's capacity nobody is
  guaranteed (capacity − Σ departments' deserved), which every project may borrow, as in Run:ai; a
  department's is the deserved it has not split among its projects (deserved − Σ its projects' deserved:
  a Cohort's quota adds to its members'); its `borrowingLimit` = limit − deserved, and `lendingLimit: 0`
  where it never lends;
* a `ClusterQueue` per project (cluster-scoped) in the cohort of its department: one resource group
  covering cpu, memory and nvidia.com/gpu, one flavor per node pool, `nominalQuota` = deserved and
  `borrowingLimit` = limit − deserved (none when there is no limit; 0 where the node pool's over-quota is
  off), `lendingLimit: 0` where the project never lends. Unused nominal quota is lent up the cohort tree, so
  departments lend to each other; a project under its nominal quota reclaims it from borrowers
  (`preemption.reclaimWithinCohort: Any`), as in the portal. Only the backend's namespace may use it;
* a `LocalQueue` per project in the backend's namespace, pointing at its ClusterQueue; pods name it in the
  `kueue.x-k8s.io/queue-name` label.

What Kueue cannot say: a weight per node pool and resource (`fairSharing.weight` is one number per
ClusterQueue or Cohort: set only when all of a team's weights agree). Project priority belongs to workloads
in Kueue (WorkloadPriorityClass), not to queues.
"""

from __future__ import annotations

from clusters.schedulers.errors import TranslationError
from clusters.schedulers.tree import (
    RESOURCES,
    Department,
    NodePool,
    Project,
    Quota,
    QuotaTree,
    joined_name,
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


def root_cohort_name(tree: QuotaTree) -> str:
    return joined_name(tree.backend, "root")


def objects(tree: QuotaTree) -> list[dict]:
    """Flavors, then Cohorts (the root first), then ClusterQueues, then LocalQueues: the order to apply them in."""
    return [*resource_flavors(tree), *cohorts(tree), *cluster_queues(tree), *local_queues(tree)]


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


def cohorts(tree: QuotaTree) -> list[dict]:
    """The root Cohort, then one per department (parent: the root); see the module docstring."""
    names: dict[str, str] = {}
    root = _unique(names, root_cohort_name(tree), f"backend {tree.backend}'s root cohort")
    spec: dict = {}
    if tree.node_pools:
        spec["resourceGroups"] = _resource_groups(tree, lambda pool, r: _entry(pool, r, _unguaranteed(tree, pool, r)))
    found = [{**_object("Cohort", root, tree), "spec": spec}]
    for department in tree.departments:
        name = _unique(names, object_name(department.name), f"department {department.name}")
        spec = {"parentName": root}
        if tree.node_pools:
            spec["resourceGroups"] = _resource_groups(
                tree, lambda pool, r, d=department: _entry(pool, r, _unsplit(d, pool, r), quota_of(d, pool.name, r))
            )
        spec.update(_fair_sharing(tree, department))
        found.append({**_object("Cohort", name, tree), "spec": spec})
    return found


def _unguaranteed(tree: QuotaTree, pool: NodePool, resource: str) -> int:
    deserved = sum(quota_of(d, pool.name, resource).deserved for d in tree.departments)
    return max(0, pool.capacity.get(resource, 0) - deserved)


def _unsplit(department: Department, pool: NodePool, resource: str) -> int:
    split = sum(quota_of(p, pool.name, resource).deserved for p in department.projects)
    return max(0, quota_of(department, pool.name, resource).deserved - split)


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
        spec["resourceGroups"] = _resource_groups(
            tree,
            lambda pool, r: _entry(pool, r, quota_of(project, pool.name, r).deserved, quota_of(project, pool.name, r)),
        )
    spec.update(_fair_sharing(tree, project))
    return spec


def _resource_groups(tree: QuotaTree, entry_of) -> list[dict]:
    """One group covering every resource, one flavor per node pool; `entry_of(pool, resource)` its quota."""
    return [
        {
            "coveredResources": [RESOURCE_NAMES[r] for r in COVERED],
            "flavors": [
                {"name": object_name(pool.name), "resources": [entry_of(pool, r) for r in COVERED]}
                for pool in tree.node_pools
            ],
        }
    ]


def _fair_sharing(tree: QuotaTree, team: Department | Project) -> dict:
    weights = {quota_of(team, pool.name, r).weight for pool in tree.node_pools for r in RESOURCES}
    return {"fairSharing": {"weight": weights.pop()}} if len(weights) == 1 else {}


def _entry(pool: NodePool, resource: str, nominal: int, quota: Quota | None = None) -> dict:
    """A (flavor, resource) quota: `nominal`, and the limits `quota` sets (the root has none)."""
    entry: dict = {"name": RESOURCE_NAMES[resource], "nominalQuota": _quantity(resource, nominal)}
    if quota is None:
        return entry
    if not pool.over_quota:
        entry["borrowingLimit"] = 0
    elif quota.limit is not None:
        entry["borrowingLimit"] = _quantity(resource, max(0, quota.limit - quota.deserved))
    if not quota.lend:
        entry["lendingLimit"] = 0
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
