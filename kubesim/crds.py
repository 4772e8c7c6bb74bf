"""Custom resources: Karpenter's NodePools (always served, as on a cluster with Karpenter installed), and those
of the quota schedulers the portal can delegate to, served on request.

``KubeEmulator(schedulers=("kai", "kueue"))`` (or ``python -m kubesim --schedulers kai,kueue``, or
``emulator.serve_schedulers("kai")`` on a running one) serves them like a cluster with those CRDs installed:
CRUD, list with selectors, watch, and the ``status`` subresource where the CRD has one (status is dropped on
create and kept on update, as an apiserver does; a test plays the controller with ``set_status``).
No schema validation: the portal checks its objects against the published schemas before it sends them.
Scope and names as in the CRDs (NVIDIA/KAI-Scheduler, kubernetes-sigs/kueue; see clusters/schedulers/crds/).
"""

from __future__ import annotations

from .resources import ResourceType

# karpenter.sh/v1 NodePool (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go): cluster-scoped, with status.
# The portal writes them for backends whose machine provider is Karpenter (clusters.machinepools.providers);
# on the emulator: `emulator.list("karpenter.sh/nodepools")`.
KARPENTER_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("karpenter.sh", "v1", "nodepools", "NodePool", False, "nodepool", (), ("status",)),
)

SCHEDULER_RESOURCES: dict[str, tuple[ResourceType, ...]] = {
    "kai": (ResourceType("scheduling.run.ai", "v2", "queues", "Queue", False, "queue", (), ("status",)),),
    "kueue": (
        ResourceType(
            "kueue.x-k8s.io",
            "v1beta1",
            "resourceflavors",
            "ResourceFlavor",
            False,
            "resourceflavor",
            ("flavor", "flavors", "rf"),
            (),
        ),
        # hierarchical cohorts: Cohort v1beta1 (Kueue v0.13+; spec.parentName), cluster-scoped, with status
        ResourceType("kueue.x-k8s.io", "v1beta1", "cohorts", "Cohort", False, "cohort", (), ("status",)),
        ResourceType(
            "kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False, "clusterqueue", ("cq",), ("status",)
        ),
        ResourceType(
            "kueue.x-k8s.io",
            "v1beta1",
            "localqueues",
            "LocalQueue",
            True,
            "localqueue",
            ("queue", "queues", "lq"),
            ("status",),
        ),
    ),
}


def scheduler_resources(names) -> list[ResourceType]:
    """The resource types of the named schedulers; an unknown name raises ValueError naming the known ones."""
    types = []
    for name in names:
        if name not in SCHEDULER_RESOURCES:
            raise ValueError(f"unknown scheduler {name!r}; known: {', '.join(SCHEDULER_RESOURCES)}")
        types.extend(SCHEDULER_RESOURCES[name])
    return types


# Karpenter's NodePool (karpenter.sh/v1, cluster-scoped), served when the simulated machine pools run
# (kubesim.autoscaler registers it if nothing else has): the NodePools the portal writes become nodes.
KARPENTER_NODEPOOL = ResourceType("karpenter.sh", "v1", "nodepools", "NodePool", False, "nodepool", (), ("status",))
