"""Capacity at maximum: what the machine pools beneath a pool's platforms have now and can grow to.

A machine pool serves a platform when its nodes belong to it (the platform's nodeSelector, affinity and
tolerations against the labels and taints the machine pool gives its nodes: membership's rule, applied
to the node shape, so a machine pool with no node yet counts too). Per machine pool: nodes now (the
inventory's nodes carrying its `node.kubernetes.io/machinepool` label) and at most (max replicas, or the
fixed count), GPUs now and at most (nodes × the instance type's GPUs), the hourly on-demand price of one
node (the instance-type catalog) and spot or on-demand. A pool counts each machine pool once.

Constant queries whatever the number of pools, platforms and machine pools: one when no machine pool is
on the pools' backends; four otherwise (machine pools, platforms, node counts, the admin's instance types).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count
from django.db.models.fields.json import KT

from clusters.machinepools.instance_types import catalog
from clusters.machinepools.node_labels import provisioned
from clusters.machinepools.spec import MACHINEPOOL_LABEL, InstanceType, MachinePoolSpec
from clusters.models import MachinePool, Node
from pools.engine import EngineError
from pools.engine.placement import evaluate
from pools.models import Platform
from pools.services.scale_from_zero_node import WouldBeNode


@dataclass
class MachinePoolFigures:
    name: str
    instance_type: str
    shape: str  # "g4dn.xlarge, 1 × T4"
    capacity_type: str  # "spot" | "on-demand"
    nodes_now: int
    nodes_max: int
    gpus_now: int
    gpus_max: int
    hourly_price: Decimal | None  # on-demand USD per node-hour; None: unknown or not sold on demand
    max_price: Decimal | None = None  # spot only: the bid cap (None: capped at the on-demand price)

    @property
    def cost(self) -> str:
        """ "on-demand, $0.192/h a node" / "spot, at most $0.526/h a node (the on-demand price)": the
        capacity type said once, with what a node costs (spot: its cap, the max price or the on-demand price)."""
        if self.capacity_type != "spot":
            price = f"{_dollars(self.hourly_price)}/h a node" if self.hourly_price else "price unknown"
            return f"on-demand, {price}"
        if self.max_price is not None:
            return f"spot, at most {_dollars(self.max_price)}/h a node"
        if self.hourly_price:
            return f"spot, at most {_dollars(self.hourly_price)}/h a node (the on-demand price)"
        return "spot, price unknown"

    @property
    def text(self) -> str:
        """One line: shape, nodes now and at most, GPUs only when the instance type has some, then the cost."""
        gpus = f"; GPUs {self.gpus_now} now, up to {self.gpus_max}" if self.gpus_max else ""
        nodes = f"nodes {self.nodes_now} now, up to {self.nodes_max}"
        return f"machine pool {self.name}: {self.shape}; {nodes}{gpus}; {self.cost}"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "instance_type": self.instance_type,
            "shape": self.shape,
            "capacity_type": self.capacity_type,
            "nodes": {"now": self.nodes_now, "max": self.nodes_max},
            "gpus": {"now": self.gpus_now, "max": self.gpus_max},
            "hourly_price": None if self.hourly_price is None else str(self.hourly_price),
            "max_price": None if self.max_price is None else str(self.max_price),
            "cost": self.cost,
        }


@dataclass
class Growth:
    """Machine pools beneath a platform or pool, and their sums now and at maximum."""

    machine_pools: list[MachinePoolFigures] = field(default_factory=list)

    def add(self, figures: MachinePoolFigures) -> None:
        if all(known.name != figures.name for known in self.machine_pools):
            self.machine_pools.append(figures)

    @property
    def nodes_now(self) -> int:
        return sum(m.nodes_now for m in self.machine_pools)

    @property
    def nodes_max(self) -> int:
        return sum(m.nodes_max for m in self.machine_pools)

    @property
    def gpus_now(self) -> int:
        return sum(m.gpus_now for m in self.machine_pools)

    @property
    def gpus_max(self) -> int:
        return sum(m.gpus_max for m in self.machine_pools)

    @property
    def summary(self) -> str:
        """ "nodes 0 now, up to 3 · GPUs 0 now, up to 3" (GPUs left out when none of the machine pools' types
        has any; empty without machine pools)."""
        if not self.machine_pools:
            return ""
        nodes = f"nodes {self.nodes_now} now, up to {self.nodes_max}"
        return f"{nodes} · GPUs {self.gpus_now} now, up to {self.gpus_max}" if self.gpus_max else nodes

    def as_dict(self) -> dict:
        return {
            "nodes": {"now": self.nodes_now, "max": self.nodes_max},
            "gpus": {"now": self.gpus_now, "max": self.gpus_max},
            "machine_pools": [m.as_dict() for m in self.machine_pools],
        }


@dataclass
class PoolGrowth:
    total: Growth = field(default_factory=Growth)
    platforms: dict[str, Growth] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {**self.total.as_dict(), "platforms": {name: g.as_dict() for name, g in self.platforms.items()}}


def growth(pool_ids: list[int], backend_ids: set[int]) -> dict[int, PoolGrowth]:
    """Per pool id: its machine pools, per platform and once each for the pool."""
    found = {pk: PoolGrowth() for pk in pool_ids}
    machine_pools = list(MachinePool.objects.filter(backend_id__in=backend_ids).order_by("name"))
    if not machine_pools:
        return found
    from pools.services.membership import platform_pod  # the placement engine: loaded only when needed

    nodes_now = _nodes_now({m.backend_id for m in machine_pools})
    types = catalog()
    shapes = [
        (m, _figures(m.spec(), types.get(m.instance_type), nodes_now.get((m.backend_id, m.name), 0)))
        for m in machine_pools
    ]
    labels: dict = {}  # what a node of each backend's machine pools comes up with (node_labels), asked once
    would_be = {
        m.pk: WouldBeNode(provisioned(m.spec(), m.backend_id, labels), types.get(m.instance_type)).node_info()
        for m in machine_pools
    }
    platforms = Platform.objects.filter(pool_id__in=pool_ids).select_related("pool").order_by("name")
    for platform in platforms:
        try:
            pod = platform_pod(platform)
        except EngineError:
            continue  # no membership either: membership reports it
        entry = found[platform.pool_id]
        served = entry.platforms.setdefault(platform.name, Growth())
        for machine_pool, figures in shapes:
            if machine_pool.backend_id != platform.pool.backend_id:
                continue
            if evaluate(pod, would_be[machine_pool.pk], check_resources=False).fits:
                served.add(figures)
                entry.total.add(figures)
    return found


def _nodes_now(backend_ids: set[int]) -> dict[tuple[int, str], int]:
    label = KT(f"labels__{MACHINEPOOL_LABEL}")
    rows = (
        Node.objects.filter(backend_id__in=backend_ids, labels__has_key=MACHINEPOOL_LABEL)
        .annotate(machine_pool=label)
        .values("backend_id", "machine_pool")
        .annotate(count=Count("pk"))
        .values_list("backend_id", "machine_pool", "count")
    )
    return {(backend_id, name): count for backend_id, name, count in rows}


def _figures(spec: MachinePoolSpec, instance: InstanceType | None, nodes_now: int) -> MachinePoolFigures:
    gpus = instance.gpu_count if instance else 0
    return MachinePoolFigures(
        name=spec.name,
        instance_type=spec.instance_type,
        shape=instance.describe() if instance else f"{spec.instance_type} (not in the catalog)",
        capacity_type=spec.capacity_type,
        nodes_now=nodes_now,
        nodes_max=spec.most_nodes,
        gpus_now=nodes_now * gpus,
        gpus_max=spec.most_nodes * gpus,
        hourly_price=instance.hourly_price if instance else None,
        max_price=spec.max_price if spec.spot else None,
    )


def _dollars(amount: Decimal) -> str:
    return f"${amount.normalize():f}" if amount == amount.to_integral_value() else f"${amount:f}".rstrip("0")
