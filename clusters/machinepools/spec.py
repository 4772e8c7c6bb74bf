"""What a machine pool is, with no Django and no I/O: the providers (ROSA, Karpenter), the exports
(Terraform, `rosa create machinepool`), the scale-from-zero shape and the simulated cluster's contract all
read these dataclasses.

Every node of a machine pool carries `node.kubernetes.io/machinepool=<name>` (the label ROSA puts on its
nodes and the seed's workloads select on), its instance type, its capacity type (spot or on-demand) and
the pool's own labels; its taints are the pool's taints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

MACHINEPOOL_LABEL = "node.kubernetes.io/machinepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "node.kubernetes.io/capacity-type"  # "spot" | "on-demand"
# The labels that say a node is a spot instance, and their spot value: ours (ROSA's), Karpenter's and EKS's.
SPOT_LABELS = {
    CAPACITY_TYPE_LABEL: "spot",
    "karpenter.sh/capacity-type": "spot",
    "eks.amazonaws.com/capacityType": "SPOT",
}
ARCH_LABEL = "kubernetes.io/arch"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
# The taint effects a machine pool may set (the seed's table; the same three Kubernetes knows).
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Put on a node when its spot instance is told it will be reclaimed (what AWS's node termination handler
# writes); the node goes after the notice period. The pod watcher reads it to name the reason.
SPOT_INTERRUPTION_TAINT = "aws-node-termination-handler/spot-itn"
SPOT_NOTICE_SECONDS = 120  # AWS's two-minute warning


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def as_kubernetes(self) -> dict:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def toleration(self) -> dict:
        """The toleration a pod needs to land despite this taint (the seed's `operator: Equal` form)."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class InstanceType:
    """One machine shape: what a node of this type offers. `hourly_price` is the on-demand price in USD
    (None: not sold on demand); `spot_hourly_price` a spot price an admin recorded (None: none recorded; cost
    then reads the shipped spot table or estimates it, docs/usage.md#cost); `price_note` and `prices_as_of` say
    where an admin's figures come from and when they were read."""

    name: str
    vcpu: int
    memory_mib: int
    arch: str = "amd64"
    gpu_count: int = 0
    gpu_model: str = ""  # short name: T4, A10G, L4, L40S, V100, A100-40GB, A100-80GB, H100, H200, B200, GB200
    gpu_product: str = ""  # the nvidia.com/gpu.product label GPU feature discovery writes
    gpu_memory_mib: int = 0
    hourly_price: Decimal | None = None
    spot_hourly_price: Decimal | None = None
    regions: tuple[str, ...] = ()  # the AWS regions that offer it, where the catalog knows them (empty: unknown)
    price_note: str = ""
    prices_as_of: date | None = None

    def capacity(self) -> dict[str, str]:
        """The node's status.capacity as Kubernetes reports it (quantities)."""
        shape = {"cpu": str(self.vcpu), "memory": f"{self.memory_mib}Mi", "pods": "110"}
        if self.gpu_count:
            shape[GPU_RESOURCE] = str(self.gpu_count)
        return shape

    def describe(self) -> str:
        """ "g4dn.xlarge, 1 × T4" / "m5.xlarge, 4 vCPU, 16 GiB"."""
        if self.gpu_count:
            return f"{self.name}, {self.gpu_count} × {self.gpu_model}"
        return f"{self.name}, {self.vcpu} vCPU, {self.memory_mib // 1024} GiB"


@dataclass(frozen=True)
class MachinePoolSpec:
    """What a provider is asked to keep: a fixed `replicas` count, or autoscaling between `min_replicas`
    (0 = scale to zero) and `max_replicas`."""

    name: str
    instance_type: str
    autoscaling: bool = True
    replicas: int = 0
    min_replicas: int = 0
    max_replicas: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    spot: bool = False
    max_price: Decimal | None = None  # spot only; None = capped at the on-demand price
    disk_size_gib: int = 300
    availability_zones: tuple[str, ...] = ()  # empty: the cluster's own
    subnets: tuple[str, ...] = ()  # ROSA: a single-AZ pool's subnet
    security_groups: tuple[str, ...] = ()  # ROSA: additional security group ids
    aws_tags: dict[str, str] = field(default_factory=dict)  # ROSA: tags on the instances
    requirements: tuple[dict, ...] = ()  # Karpenter: NodePool requirements beyond the portal's own
    limits: dict[str, str] = field(default_factory=dict)  # Karpenter: cpu, memory, nvidia.com/gpu
    disruption: dict = field(default_factory=dict)  # Karpenter: consolidationPolicy, consolidateAfter, budgets

    @property
    def most_nodes(self) -> int:
        return self.max_replicas if self.autoscaling else self.replicas

    @property
    def fewest_nodes(self) -> int:
        return self.min_replicas if self.autoscaling else self.replicas

    @property
    def capacity_type(self) -> str:
        return "spot" if self.spot else "on-demand"

    def node_labels(self, instance: InstanceType | None = None) -> dict[str, str]:
        """The labels every node of this pool carries (the pool's own last, as the provider applies them)."""
        labels = {
            MACHINEPOOL_LABEL: self.name,
            INSTANCE_TYPE_LABEL: self.instance_type,
            CAPACITY_TYPE_LABEL: self.capacity_type,
        }
        if instance is not None:
            labels[ARCH_LABEL] = instance.arch
            if instance.gpu_product:
                labels[GPU_PRODUCT_LABEL] = instance.gpu_product
        labels.update(self.labels)
        return labels

    def node_taints(self) -> list[dict]:
        return [taint.as_kubernetes() for taint in self.taints]

    def tolerations(self) -> list[dict]:
        return [taint.toleration() for taint in self.taints]
