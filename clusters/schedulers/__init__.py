"""Quotas as the cluster's own scheduler objects: pure translation (plain dataclasses in, dicts out).

A backend whose `quota_scheduler` is `kai` or `kueue` leaves admission and preemption to that scheduler;
the portal writes the same quotas as its objects (applied with `clusters.kube.custom_objects`) and routes every pod
to it. Nothing here touches the database or a cluster. See docs/quota-schedulers.md.

* `tree`: the input (`QuotaTree` of node pools and departments → projects with per node pool, per
  resource `Quota`s) and the object names derived from it;
* `kai`: KAI-Scheduler `Queue`s (scheduling.run.ai/v2);
* `kueue`: Kueue `ResourceFlavor`s, `Cohort`s, `ClusterQueue`s, `LocalQueue`s (kueue.x-k8s.io/v1beta1);
* `routing`: the schedulerName and labels a pod needs to reach its queue;
* `crds`: the schedulers' published CRD schemas (crds/*.json) and `validate`.
"""

from clusters.schedulers.crds import CustomResource, resource_of, validate
from clusters.schedulers.errors import SchedulerObjectInvalid, TranslationError
from clusters.schedulers.routing import DELEGATING, pod_routing, workload_routing
from clusters.schedulers.tree import Department, NodePool, Project, Quota, QuotaTree

__all__ = [
    "DELEGATING",
    "CustomResource",
    "Department",
    "NodePool",
    "Project",
    "Quota",
    "QuotaTree",
    "SchedulerObjectInvalid",
    "TranslationError",
    "pod_routing",
    "resource_of",
    "validate",
    "workload_routing",
]
