"""Machine pools as the cloud sees them: what each pool's nodes look like, read from the emulator's stores.

Two sources, as on a real cluster:

* ROSA: the OpenShift Cluster Manager keeps machine pools per cluster; kubesim's copy of that state is
  ``emulator.ocm_machine_pools = {ocm_cluster_id: {pool_id: <OCM MachinePool JSON>}}`` (clusters_mgmt v1 field
  names: ``instance_type``, ``replicas`` or ``autoscaling.min_replicas/max_replicas``, ``labels``, ``taints``,
  ``aws.spot_market_options``, ``root_volume.aws.size``; ``status.current_replicas`` is written back).
* Karpenter: ``karpenter.sh/v1`` NodePool objects (cluster-scoped custom objects): template labels and taints,
  requirements on ``node.kubernetes.io/instance-type`` and ``karpenter.sh/capacity-type``, ``spec.limits``.

A node of a pool is named ``<pool>-<5 random lowercase letters or digits>`` and carries the labels the portal's
``clusters.machinepools.spec.MachinePoolSpec.node_labels`` lists (machine-pool name, instance type, capacity type,
arch, GPU product, the pool's labels) plus ``kubernetes.io/hostname``, ``kubernetes.io/os`` and the worker role;
its taints are the pool's; its capacity is the instance type's, from the portal's catalog read as a data file
(``clusters/machinepools/instance_types.json``; kubesim imports nothing of the portal).
"""

from __future__ import annotations

import functools
import json
import math
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .crds import KARPENTER_NODEPOOL
from .fleet import node_info
from .scheduling import parse_quantity

CATALOG_PATH = Path(__file__).resolve().parent.parent / "clusters" / "machinepools" / "instance_types.json"
MACHINEPOOL_LABEL = "node.kubernetes.io/machinepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "node.kubernetes.io/capacity-type"
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
KARPENTER_CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
ARCH_LABEL = "kubernetes.io/arch"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
# Which pool made a node ("ocm/<cluster id>/<pool id>" or "karpenter/<nodepool>"): the nodes kubesim may
# scale down or drain; nodes without it (the demo fleet's, a test's) are never touched.
POOL_ANNOTATION = "kubesim/machine-pool"
# The labels and taints the pool gave the node (JSON), so that a change of the pool's reaches it (kubesim.autoscaler).
APPLIED_ANNOTATION = "kubesim/machine-pool-applied"
NODEPOOLS = KARPENTER_NODEPOOL.key
UNDERUTILIZED = "WhenEmptyOrUnderutilized"  # Karpenter v1's default consolidationPolicy
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # as the apiserver's generateName: no vowels, no 0/1/3


@dataclass(frozen=True)
class InstanceShape:
    name: str
    vcpu: int
    memory_mib: int
    arch: str = "amd64"
    gpu_count: int = 0
    gpu_product: str = ""
    hourly_price: float = math.inf  # not sold on demand: the last choice

    def capacity(self, disk_gib: int = 300) -> dict[str, str]:
        shape = {
            "cpu": str(self.vcpu),
            "memory": f"{self.memory_mib}Mi",
            "pods": "110",
            "ephemeral-storage": f"{disk_gib}Gi",
        }
        if self.gpu_count:
            shape[GPU_RESOURCE] = str(self.gpu_count)
        return shape


@functools.cache
def load_catalog(path: Path = CATALOG_PATH) -> dict[str, InstanceShape]:
    """The instance types by name, from the portal's shipped catalog (a JSON data file)."""
    rows = json.loads(path.read_text())["instance_types"]
    return {
        row["name"]: InstanceShape(
            row["name"],
            int(row["vcpu"]),
            int(row["memory_mib"]),
            row.get("arch") or "amd64",
            int(row.get("gpu_count") or 0),
            row.get("gpu_product") or "",
            float(row["hourly_price"]) if row.get("hourly_price") else math.inf,
        )
        for row in rows
    }


@dataclass
class PoolShape:
    """One machine pool, whatever its source: how many nodes, of which types, labelled and tainted how."""

    key: str  # POOL_ANNOTATION's value
    name: str  # node name prefix
    instance_types: list[InstanceShape]  # cheapest first; a new node takes the first one its pod fits
    capacity_type: str  # "spot" | "on-demand"
    labels: dict[str, str]
    taints: list[dict]
    fewest: int
    most: float  # math.inf: no bound but spec.limits
    disk_gib: int = 300
    limits: dict[str, float] = field(default_factory=dict)  # Karpenter spec.limits (cpu, memory, gpu, nodes)
    scale_down: bool = True  # Karpenter's consolidateAfter: Never keeps empty nodes
    # Karpenter's consolidationPolicy WhenEmptyOrUnderutilized (its default): a node whose pods fit elsewhere goes
    consolidate_underutilized: bool = False
    ocm: dict | None = None  # the OCM JSON to write status.current_replicas into

    @property
    def karpenter(self) -> bool:
        return self.key.startswith("karpenter/")

    def node_labels(self, instance: InstanceShape, hostname: str) -> dict[str, str]:
        labels = {
            INSTANCE_TYPE_LABEL: instance.name,
            ARCH_LABEL: instance.arch,
        }
        if self.karpenter:
            labels.update({KARPENTER_NODEPOOL_LABEL: self.name, KARPENTER_CAPACITY_TYPE_LABEL: self.capacity_type})
        else:
            labels = {MACHINEPOOL_LABEL: self.name, **labels, CAPACITY_TYPE_LABEL: self.capacity_type}
        if instance.gpu_product:
            labels[GPU_PRODUCT_LABEL] = instance.gpu_product
        labels.update(self.labels)
        labels.update({"kubernetes.io/hostname": hostname, "kubernetes.io/os": "linux"})
        labels["node-role.kubernetes.io/worker"] = ""
        return labels

    def node(self, instance: InstanceShape, name: str, ready: bool) -> dict[str, Any]:
        """A Node of this pool as the cloud registers it (NotReady until its kubelet has booted)."""
        capacity = instance.capacity(self.disk_gib)
        machine = uuid.uuid4()
        ip = f"10.0.{machine.int % 250}.{machine.int // 250 % 250 + 2}"
        spec: dict[str, Any] = {"providerID": f"aws:///us-east-1a/i-{machine.hex[:17]}"}
        if self.taints:
            spec["taints"] = [dict(t) for t in self.taints]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": self.node_labels(instance, name),
                "annotations": {POOL_ANNOTATION: self.key, APPLIED_ANNOTATION: applied_value(self)},
            },
            "spec": spec,
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": [ready_condition(ready)],
                "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": node_info(instance.arch, machine.hex, str(machine), str(uuid.uuid4())),
            },
        }

    def new_node_name(self, rand, taken) -> str:
        while True:
            name = f"{self.name}-{''.join(rand.choices(_NAME_CHARS, k=5))}"
            if name not in taken:
                return name


def applied_value(pool: PoolShape) -> str:
    return json.dumps({"labels": pool.labels, "taints": pool.taints}, sort_keys=True)


def applied_by_pool(node: dict, pool: PoolShape) -> dict:
    """What the node's pool gave it ({"labels": {...}, "taints": [...]}); for a node made before kubesim kept
    that (a state file): those of the pool's current labels and taints the node has."""
    raw = (node["metadata"].get("annotations") or {}).get(APPLIED_ANNOTATION)
    try:
        applied = json.loads(raw) if raw else None
    except ValueError:
        applied = None
    if not isinstance(applied, dict):
        labels, taints = node["metadata"].get("labels") or {}, (node.get("spec") or {}).get("taints") or ()
        return {
            "labels": {k: v for k, v in pool.labels.items() if labels.get(k) == v},
            "taints": [t for t in pool.taints if t in taints],
        }
    return {"labels": dict(applied.get("labels") or {}), "taints": list(applied.get("taints") or ())}


def ready_condition(ready: bool, since: str | None = None) -> dict:
    from .store import now_rfc3339

    now = since or now_rfc3339()
    if ready:
        return {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    return {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime network not ready: NetworkReady=false",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


# ------------------------------------------------------------------------------------------------ readers
def ocm_pools(store: dict[str, dict[str, dict]], catalog: dict[str, InstanceShape]) -> tuple[list[PoolShape], list]:
    """The OCM store's pools, and (pool key, why) for those kubesim cannot make nodes for."""
    pools, refused = [], []
    for cluster_id, by_id in list(store.items()):
        for pool_id, pool in list(by_id.items()):
            key = f"ocm/{cluster_id}/{pool_id}"
            instance = catalog.get(pool.get("instance_type") or "")
            if instance is None:
                refused.append((key, f"unknown instance type {pool.get('instance_type')!r}"))
                continue
            scaling = pool.get("autoscaling")
            if scaling:
                fewest, most = int(scaling.get("min_replicas") or 0), int(scaling.get("max_replicas") or 0)
            else:
                fewest = most = int(pool.get("replicas") or 0)
            spot = "spot_market_options" in (pool.get("aws") or {})
            pools.append(
                PoolShape(
                    key=key,
                    name=str(pool.get("id") or pool_id),
                    instance_types=[instance],
                    capacity_type="spot" if spot else "on-demand",
                    labels={str(k): str(v) for k, v in (pool.get("labels") or {}).items()},
                    taints=[
                        {"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]}
                        for t in pool.get("taints") or ()
                    ],
                    fewest=fewest,
                    most=max(fewest, most),
                    disk_gib=int((((pool.get("root_volume") or {}).get("aws")) or {}).get("size") or 300),
                    ocm=pool,
                )
            )
    return pools, refused


def _requirement(requirements: list[dict], key: str) -> list[str] | None:
    for req in requirements or ():
        if req.get("key") == key and req.get("operator", "In") == "In":
            return [str(v) for v in req.get("values") or ()]
    return None


def nodepool_shape(nodepool: dict, catalog: dict[str, InstanceShape]) -> PoolShape:
    """A Karpenter NodePool: the instance types it allows (all of the catalog if it names none), cheapest first;
    spot when allowed (Karpenter prefers it); no floor; bounded by spec.limits; its consolidation policy."""
    name = nodepool["metadata"]["name"]
    spec = nodepool.get("spec") or {}
    template = spec.get("template") or {}
    tspec = template.get("spec") or {}
    requirements = tspec.get("requirements") or []
    names = _requirement(requirements, INSTANCE_TYPE_LABEL)
    types = [catalog[n] for n in names if n in catalog] if names is not None else list(catalog.values())
    types.sort(key=lambda t: (t.hourly_price, t.name))
    capacity_types = _requirement(requirements, KARPENTER_CAPACITY_TYPE_LABEL) or ["on-demand"]
    limits = {}
    for res, value in (spec.get("limits") or {}).items():
        try:
            limits[res] = parse_quantity(value)
        except ValueError:
            continue
    disruption = spec.get("disruption") or {}
    return PoolShape(
        key=f"karpenter/{name}",
        name=name,
        instance_types=types,
        capacity_type="spot" if "spot" in capacity_types else "on-demand",
        labels={str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()},
        taints=[dict(t) for t in tspec.get("taints") or ()],
        fewest=0,
        most=limits.get("nodes", math.inf),
        limits=limits,
        scale_down=str(disruption.get("consolidateAfter", "")) != "Never",
        consolidate_underutilized=disruption.get("consolidationPolicy", UNDERUTILIZED) == UNDERUTILIZED,
    )


def node_resources(node: dict) -> dict[str, float]:
    """The node's capacity in base units (what counts against a NodePool's limits)."""
    out = {}
    for res, value in ((node.get("status") or {}).get("capacity") or {}).items():
        try:
            out[res] = parse_quantity(value)
        except ValueError:
            continue
    return out
