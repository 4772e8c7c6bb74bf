"""Karpenter: a machine pool is a `karpenter.sh/v1` NodePool (cluster-scoped), written through the Kubernetes
API (`clusters.kube.custom_objects`, the one Kubernetes adapter).

    metadata.labels            app.kubernetes.io/managed-by: pool-portal (the only NodePools it deletes)
    spec.template.metadata     labels: node.kubernetes.io/machinepool=<name> and the pool's labels
    spec.template.spec         requirements: node.kubernetes.io/instance-type In [type],
                               karpenter.sh/capacity-type In [spot | on-demand], topology.kubernetes.io/zone In
                               availability_zones (if any), then the pool's own `requirements`; taints;
                               nodeClassRef
    spec.limits                autoscaling: cpu, memory, nvidia.com/gpu and nodes for max_replicas nodes, with
                               the pool's own `limits` over them
    spec.replicas              fixed size (Karpenter's static NodePool), with limits.nodes only
    spec.disruption            consolidate empty nodes after 30 s, unless the pool's `disruption` says otherwise

Karpenter launches nodes for pending pods and has no minimum, no spot price cap, and takes the root volume
from the EC2NodeClass: those fields are neither sent nor compared (`fields`). The node count is the
NodePool's `status.resources.nodes`.
"""

from __future__ import annotations

from clusters.kube import custom_objects
from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.machinepools.providers.base import MANAGED_BY, MANAGED_BY_LABEL, Observed, ProviderError
from clusters.machinepools.spec import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    MACHINEPOOL_LABEL,
    InstanceType,
    MachinePoolSpec,
    Taint,
)

CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"}
DISRUPTION = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}


class NodePools:
    group, version, plural, namespaced = "karpenter.sh", "v1", "nodepools", False


NODEPOOLS = NodePools()


def from_backend(backend, catalog=None) -> KarpenterProvider:
    """The provider of a backend whose machine_provider is karpenter: NodePools on its own cluster."""
    from clusters.kube.connection import connect
    from clusters.machinepools.instance_types import catalog as merged_catalog

    try:
        kube = connect(backend)
    except KubeError as error:
        raise ProviderError(error.reason, field=error.field) from None
    return KarpenterProvider(kube, backend.karpenter_node_class, catalog if catalog is not None else merged_catalog())


class KarpenterProvider:
    name = "karpenter"
    # limits and disruption are sent but not compared (Karpenter defaults what the portal leaves out)
    fields = (
        "instance_type",
        "autoscaling",
        "replicas",
        "max_replicas",
        "labels",
        "taints",
        "spot",
        "availability_zones",
        "requirements",
    )

    def __init__(self, kube: KubeClient, node_class: str, catalog: dict[str, InstanceType]) -> None:
        self.kube, self.node_class, self.catalog = kube, node_class or "default", catalog

    def observe(self) -> dict[str, Observed]:
        items = self._do(lambda: custom_objects.list_objects(self.kube, NODEPOOLS))
        return {item["metadata"]["name"]: observed(item) for item in items}

    def create(self, spec: MachinePoolSpec) -> Observed:
        return self._apply(spec)

    def update(self, spec: MachinePoolSpec, current: Observed) -> Observed:
        if spec.autoscaling != current.spec.autoscaling:  # the CRD's rule: has(self.replicas) == has(oldSelf.replicas)
            raise ProviderError(
                f"NodePool {current.provider_id}: Karpenter cannot turn a static NodePool (fixed replicas) into a "
                "dynamic one (autoscaling) or back; delete the machine pool and create it again",
                field="autoscaling",
            )
        return self._apply(spec)

    def delete(self, current: Observed) -> None:
        if not current.managed:
            raise ProviderError(f"NodePool {current.provider_id} is not the portal's: it is never deleted")
        self._do(lambda: custom_objects.delete(self.kube, NODEPOOLS, current.provider_id))

    def close(self) -> None:
        self.kube.close()

    def _apply(self, spec: MachinePoolSpec) -> Observed:
        body = node_pool(spec, self.node_class, self.catalog.get(spec.instance_type))
        return observed(self._do(lambda: custom_objects.apply(self.kube, NODEPOOLS, body).obj))

    @staticmethod
    def _do(call):
        try:
            return call()
        except KubeError as error:
            raise ProviderError(error.reason, transient=error.transient, provider_status=error.k8s_status) from None


def node_pool(spec: MachinePoolSpec, node_class: str, instance: InstanceType | None) -> dict:
    """The NodePool a spec asks for."""
    requirements = [
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [spec.instance_type]},
        {"key": CAPACITY_TYPE, "operator": "In", "values": [spec.capacity_type]},
    ]
    if spec.availability_zones:
        requirements.append({"key": ZONE_LABEL, "operator": "In", "values": list(spec.availability_zones)})
    requirements += [_requirement(r) for r in spec.requirements]
    template_spec = {
        "requirements": requirements,
        "taints": [taint.as_kubernetes() for taint in spec.taints],
        "nodeClassRef": {**NODE_CLASS, "name": node_class},
    }
    body: dict = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": spec.name, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {
            "template": {"metadata": {"labels": {MACHINEPOOL_LABEL: spec.name, **spec.labels}}, "spec": template_spec},
            "disruption": {**DISRUPTION, **spec.disruption},
        },
    }
    if spec.autoscaling:
        body["spec"]["limits"] = {**limits(spec.max_replicas, instance), **spec.limits}
    else:  # a static NodePool: only limits.nodes is allowed beside replicas
        body["spec"]["replicas"] = spec.replicas
        body["spec"]["limits"] = {"nodes": str(spec.replicas)}
    return body


def _requirement(requirement: dict) -> dict:
    """A requirement as the NodePool takes it: no `values` for Exists and DoesNotExist."""
    return {key: value for key, value in requirement.items() if key != "values" or value}


def limits(nodes: int, instance: InstanceType | None) -> dict[str, str]:
    """What `nodes` nodes of the instance type add up to: Karpenter stops launching there."""
    bounds = {"nodes": str(nodes)}
    if instance is not None:
        bounds.update(cpu=str(instance.vcpu * nodes), memory=f"{instance.memory_mib * nodes}Mi")
        if instance.gpu_count:
            bounds[GPU_RESOURCE] = str(instance.gpu_count * nodes)
    return bounds


def observed(item: dict) -> Observed:
    """A NodePool in the portal's terms."""
    meta, spec = item.get("metadata") or {}, item.get("spec") or {}
    template = spec.get("template") or {}
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.pop(MACHINEPOOL_LABEL, None)
    listed = (template.get("spec") or {}).get("requirements") or ()
    requirements = {r.get("key"): r.get("values") or [] for r in listed}
    own = (INSTANCE_TYPE_LABEL, CAPACITY_TYPE, ZONE_LABEL)
    static = "replicas" in spec
    max_nodes = _int((spec.get("limits") or {}).get("nodes"))
    pool = MachinePoolSpec(
        name=meta.get("name", ""),
        instance_type=",".join(requirements.get(INSTANCE_TYPE_LABEL) or ()),
        autoscaling=not static,
        replicas=_int(spec.get("replicas")),
        max_replicas=0 if static else max_nodes,
        labels=labels,
        taints=tuple(
            Taint(t["key"], t.get("value", ""), t["effect"]) for t in (template.get("spec") or {}).get("taints") or ()
        ),
        spot=requirements.get(CAPACITY_TYPE) == ["spot"],
        availability_zones=tuple(requirements.get(ZONE_LABEL) or ()),
        requirements=tuple(
            {"key": r.get("key"), "operator": r.get("operator"), "values": list(r.get("values") or [])}
            for r in listed
            if r.get("key") not in own
        ),
    )
    managed = (meta.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
    nodes = ((item.get("status") or {}).get("resources") or {}).get("nodes")
    return Observed(pool, meta.get("name", ""), managed, None if nodes is None else _int(nodes))


def _int(value) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
