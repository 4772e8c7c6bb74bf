"""Capacity at maximum: what the machine pools beneath a pool's platforms have now and can grow to.

A machine pool serves a platform when its nodes belong to it (the platform's nodeSelector, affinity and
tolerations against the labels and taints the machine pool gives its nodes: membership's rule, applied
to the node shape, so a machine pool with no node yet counts too). Per machine pool: nodes now (the
inventory's nodes carrying its `node.kubernetes.io/machinepool` label) and at most (max replicas, or the
fixed count), GPUs now and at most (nodes × the instance type's GPUs), the hourly on-demand price of one
node and, for spot, the spot price against it with the saving (clusters.machinepools.pricing: the backend's
price overrides, the instance-type catalog, the shipped spot table or an estimate). A pool counts each machine
pool once.

The figures of each machine pool are its status (`clusters.machinepools.figures`, the one computation the admin,
the REST API and the CLI read too): nodes now from the inventory, at most from its scaling, cost from
`clusters.machinepools.pricing` for the backend's region.

Constant queries whatever the number of pools, platforms and machine pools: one when no machine pool is
on the pools' backends; five otherwise (machine pools with their backends, platforms, node counts, the admin's
instance types, the backends' price overrides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from clusters.machinepools.figures import MachinePoolStatus, statuses
from clusters.machinepools.node_labels import provisioned
from clusters.machinepools.pricing import PoolCost
from clusters.models import MachinePool
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
    pricing: PoolCost | None = None  # now and at max, spot against on-demand (clusters.machinepools.pricing)
    state: str = ""  # the provider's last answer: ready, scaling, drifted, retrying, failed, pending, export-only

    @property
    def cost(self) -> str:
        """ "on-demand, $0.192/h a node" / "spot ≈ $0.18/h a node (estimate) vs on-demand $0.526/h, saving 66%; at
        most $0.526/h (the on-demand price)": the capacity type said once, with what a node costs (spot: the spot
        price, an estimate said so, against on-demand with the saving, then its cap: the max price or the on-demand
        price it is capped at)."""
        if self.capacity_type != "spot":
            price = f"{_dollars(self.hourly_price)}/h a node" if self.hourly_price else "price unknown"
            return f"on-demand, {price}"
        cap = f"at most {_dollars(self.max_price)}/h" if self.max_price is not None else None
        if cap is None and self.hourly_price:
            cap = f"at most {_dollars(self.hourly_price)}/h (the on-demand price)"
        each = self.pricing.each if self.pricing else None
        if each is None or each.hourly is None:
            spot = "spot, price unknown"
        else:
            spot = f"spot {'≈ ' if each.estimate else ''}{_dollars(each.hourly)}/h a node"
            spot += " (estimate)" if each.estimate else ""
            if self.hourly_price:
                spot += f" vs on-demand {_dollars(self.hourly_price)}/h, saving {self.pricing.saving_percent}%"
        return f"{spot}; {cap}" if cap else spot

    @property
    def state_tone(self) -> str:
        """The badge of the state on the pool page: fine, on its way, or in trouble."""
        if self.state in ("failed",):
            return "bad"
        if self.state in ("retrying", "drifted"):
            return "warn"
        return "ok" if self.state == "ready" else "run"

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
            "hourly_cost": self.pricing.as_dict() if self.pricing else None,
            "state": self.state,
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
    def has_spot(self) -> bool:
        """Any of its machine pools runs spot machines (the pages explain reclaiming only then)."""
        return any(m.capacity_type == "spot" for m in self.machine_pools)

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


@dataclass(frozen=True)
class GrowthLines:
    """What the catalog prints of a Growth: its summary and one line per machine pool. The capacity summary keeps
    them as text (pools.services.capacity_summary), so the catalog of a fleet computes no machine pool's status."""

    summary: str = ""
    lines: tuple[str, ...] = ()

    @classmethod
    def of(cls, growth: Growth) -> GrowthLines:
        return cls(growth.summary, tuple(m.text for m in growth.machine_pools))

    def as_dict(self) -> dict:
        return {"summary": self.summary, "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: dict) -> GrowthLines:
        return cls(str(data.get("summary", "")), tuple(str(line) for line in data.get("lines", ())))


@dataclass(frozen=True)
class PoolGrowthLines:
    total: GrowthLines = GrowthLines()
    platforms: dict[str, GrowthLines] = field(default_factory=dict)

    @classmethod
    def of(cls, growth: PoolGrowth) -> PoolGrowthLines:
        return cls(GrowthLines.of(growth.total), {name: GrowthLines.of(g) for name, g in growth.platforms.items()})

    def as_dict(self) -> dict:
        return {**self.total.as_dict(), "platforms": {name: g.as_dict() for name, g in self.platforms.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> PoolGrowthLines:
        platforms = data.get("platforms", {})
        return cls(GrowthLines.from_dict(data), {name: GrowthLines.from_dict(g) for name, g in platforms.items()})


def growth(pool_ids: list[int], backend_ids: set[int]) -> dict[int, PoolGrowth]:
    """Per pool id: its machine pools, per platform and once each for the pool."""
    found = {pk: PoolGrowth() for pk in pool_ids}
    machine_pools = list(
        MachinePool.objects.filter(backend_id__in=backend_ids).select_related("backend").order_by("name")
    )
    if not machine_pools:
        return found
    from pools.services.membership import platform_pod  # the placement engine: loaded only when needed

    status = statuses(machine_pools)
    shapes = [(m, figures_of(status[m.pk])) for m in machine_pools]
    labels: dict = {}  # what a node of each backend's machine pools comes up with (node_labels), asked once
    would_be = {
        m.pk: WouldBeNode(provisioned(status[m.pk].spec, m.backend_id, labels), status[m.pk].shape).node_info()
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


def figures_of(status: MachinePoolStatus) -> MachinePoolFigures:
    """A machine pool's line on the pool pages, from its status (the same figures the admin and the API show)."""
    spec, nodes, gpus = status.spec, status.nodes, status.gpus
    return MachinePoolFigures(
        name=spec.name,
        instance_type=spec.instance_type,
        shape=status.machine,
        capacity_type=spec.capacity_type,
        nodes_now=nodes.now,
        nodes_max=nodes.max,
        gpus_now=gpus.now,
        gpus_max=gpus.max,
        hourly_price=status.cost.on_demand.hourly,
        max_price=spec.max_price if spec.spot else None,
        pricing=status.cost,
        state=status.state,
    )


def _dollars(amount: Decimal) -> str:
    return f"${amount.normalize():f}" if amount == amount.to_integral_value() else f"${amount:f}".rstrip("0")
