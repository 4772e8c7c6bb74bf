"""A machine pool's status figures, computed once for every door (issue #33): the admin, `GET /api/machine_pools`,
`machinepool list|describe` and the researchers' pool pages all read `status_of` / `statuses`.

Per machine pool:
- its state and what the provider last answered (`state`, `provider_id`, `last_answer`, when, failed attempts):
  the reconcile's record (clusters.machinepools.reconcile);
- its nodes now and ready: the inventory's (`inventory_nodes.node_counts`, the watcher's, within seconds of the
  cluster; what placement sees), beside the provider's count at the last reconcile;
- its scaling: fixed replicas, or autoscaling between min and max;
- capacity now and at maximum: nodes, and per node the instance type's GPUs, vCPUs and memory (the machine's, as
  the catalog lists it; a node's allocatable is a little less);
- hourly cost now and at maximum: `clusters.machinepools.pricing` (`node_prices`, `priced`), the one cost rule
  (the backend's price overrides, the instance-type catalog, the shipped spot table for the backend's `aws_region`,
  else an estimate);
- where its machines run (zones, subnets, security groups, AWS tags; Karpenter's requirements, limits, disruption),
  as recorded on the pool;
- what a workload needs to land there (`scheduling`: the node selector and the tolerations, the seed's
  `workload_scheduling_info`).

Constant queries whatever the number of machine pools: their backends (1, none when the caller's query brought
them, `select_related("backend")`: a page of many machine pools reads faster without, the backends being few), their
node counts (1), the admin's instance types (1) and the backends' price overrides (1 per installed reader). One
node's prices are worked out once per backend, instance type and capacity type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from clusters.machinepools import instance_types, pricing
from clusters.machinepools.inventory_nodes import NodeCount, node_counts
from clusters.machinepools.pricing import PoolCost
from clusters.machinepools.spec import MACHINEPOOL_LABEL, InstanceType, MachinePoolSpec

MIB = 1024 * 1024
# Where each provider-specific setting applies (clusters.machinepools.provider_limits)
ROSA_PLACEMENT = ("availability_zones", "subnets", "security_groups", "aws_tags")
KARPENTER_PLACEMENT = ("requirements", "limits", "disruption")


@dataclass(frozen=True)
class Range:
    """A figure now and at the machine pool's maximum."""

    now: int
    max: int

    def as_dict(self) -> dict:
        return {"now": self.now, "max": self.max}


@dataclass(frozen=True)
class MachinePoolStatus:
    name: str
    backend: str
    provider: str  # the backend's machine provider: "rosa", "karpenter" or "" (export only)
    region: str  # the backend's AWS region ("" unknown: the shipped prices' region is used)
    spec: MachinePoolSpec
    shape: InstanceType | None  # None: the instance type is not in the catalog
    description: str
    state: str
    provider_id: str
    last_answer: str
    last_answer_at: datetime | None
    attempts: int
    inventory: NodeCount  # the backend's nodes labelled with the pool's name, and how many are ready
    provider_nodes: int  # what the provider counted at the last reconcile
    provider_ready: int
    cost: PoolCost
    node_labels: dict[str, str] = field(default_factory=dict)

    # -- figures ---------------------------------------------------------------------------------------------

    @property
    def nodes(self) -> Range:
        return Range(self.inventory.total, self.spec.most_nodes)

    @property
    def gpus(self) -> Range:
        each = self.shape.gpu_count if self.shape else 0
        return Range(self.inventory.total * each, self.spec.most_nodes * each)

    @property
    def cpu_millicores(self) -> Range:
        each = self.shape.vcpu * 1000 if self.shape else 0
        return Range(self.inventory.total * each, self.spec.most_nodes * each)

    @property
    def memory_bytes(self) -> Range:
        each = self.shape.memory_mib * MIB if self.shape else 0
        return Range(self.inventory.total * each, self.spec.most_nodes * each)

    @property
    def machine(self) -> str:
        """ "g4dn.xlarge, 1 × T4" / "m5.xlarge, 4 vCPU, 16 GiB" / "x9.huge (not in the catalog)"."""
        return self.shape.describe() if self.shape else f"{self.spec.instance_type} (not in the catalog)"

    @property
    def scaling(self) -> str:
        """ "autoscaling 0–3" / "2 fixed"."""
        spec = self.spec
        return f"autoscaling {spec.min_replicas}–{spec.max_replicas}" if spec.autoscaling else f"{spec.replicas} fixed"

    @property
    def replicas(self) -> str:
        """As `rosa list machinepools` prints them: "0-3" when autoscaling, else the count."""
        spec = self.spec
        return f"{spec.min_replicas}-{spec.max_replicas}" if spec.autoscaling else str(spec.replicas)

    @property
    def spot_instances(self) -> str:
        """As `rosa list machinepools` prints them: "Yes (max $0.5)", "Yes (on-demand)" or "No"."""
        if not self.spec.spot:
            return "No"
        price = self.spec.max_price
        return f"Yes (max ${price.normalize():f})" if price is not None else "Yes (on-demand)"

    @property
    def capacity_line(self) -> str:
        """ "2 / 3 nodes, 2 / 3 GPUs" (GPUs only when the instance type has some): now / at max."""
        nodes, gpus = self.nodes, self.gpus
        line = f"{nodes.now} / {nodes.max} nodes"
        return f"{line}, {gpus.now} / {gpus.max} GPUs" if gpus.max else line

    @property
    def placement(self) -> dict:
        """The provider settings recorded on the pool (empty ones left out)."""
        spec = self.spec
        found = {name: _plain(getattr(spec, name)) for name in (*ROSA_PLACEMENT, *KARPENTER_PLACEMENT)}
        return {name: value for name, value in found.items() if value}

    @property
    def scheduling(self) -> dict:
        """What a workload needs to land on this pool's nodes (the seed's `workload_scheduling_info`): the node
        selector on the label every node of the pool carries, and a toleration for each of its taints. The pool's
        own labels are there to select on too (`node-type: gpu`, as the seed's ML-training Job does)."""
        return {
            "node_selector": {MACHINEPOOL_LABEL: self.name},
            "tolerations": self.spec.tolerations(),
            "node_labels": dict(self.node_labels),
        }

    def as_dict(self) -> dict:
        """The status as the REST API and `--format json` answer it."""
        spec = self.spec
        return {
            "name": self.name,
            "backend": self.backend,
            "provider": self.provider,
            "region": self.region,
            "description": self.description,
            "state": self.state,
            "provider_id": self.provider_id,
            "last_answer": self.last_answer,
            "last_answer_at": self.last_answer_at.isoformat() if self.last_answer_at else None,
            "attempts": self.attempts,
            "instance_type": spec.instance_type,
            "machine": self.machine,
            "capacity_type": spec.capacity_type,
            "spot": spec.spot,
            "max_price": None if spec.max_price is None else f"{spec.max_price.normalize():f}",
            "disk_size": spec.disk_size_gib,
            "autoscaling": (
                {"min_replicas": spec.min_replicas, "max_replicas": spec.max_replicas} if spec.autoscaling else None
            ),
            "replicas": None if spec.autoscaling else spec.replicas,
            "nodes": {
                "now": self.inventory.total,
                "ready": self.inventory.ready,
                "min": spec.fewest_nodes,
                "max": spec.most_nodes,
                "provider_now": self.provider_nodes,
                "provider_ready": self.provider_ready,
            },
            "capacity": {
                "nodes": self.nodes.as_dict(),
                "gpus": self.gpus.as_dict(),
                "cpu_millicores": self.cpu_millicores.as_dict(),
                "memory_bytes": self.memory_bytes.as_dict(),
            },
            "hourly_cost": {**self.cost.as_dict(), "line": self.cost.line()},
            "labels": dict(spec.labels),
            "taints": [taint.as_kubernetes() for taint in spec.taints],
            "placement": self.placement,
            "scheduling": self.scheduling,
        }


def statuses(pools) -> dict[int, MachinePoolStatus]:
    """Machine pool id -> its status, for `pools` (MachinePool rows), in constant queries: their backends (none
    when the rows came with them, `select_related("backend")`), node counts, instance types, price overrides."""
    pools = list(pools)
    if not pools:
        return {}
    backends = _backends(pools)
    counts = node_counts(pools)
    known = instance_types.catalog()
    prices = pricing.overrides({pool.backend_id for pool in pools})
    each: dict = {}  # one node's prices, per (backend, instance type, spot): many pools share them
    found = {}
    for pool in pools:
        backend, override = backends[pool.backend_id], prices.get((pool.backend_id, pool.instance_type))
        key = (pool.backend_id, pool.instance_type, pool.spot)
        if key not in each:
            shape = known.get(pool.instance_type)
            region = backend.aws_region or ""
            each[key] = (shape, pricing.node_prices(pool.instance_type, pool.spot, shape, override, region))
        shape, prices_each = each[key]
        inventory = counts.get((pool.backend_id, pool.name), NodeCount())
        found[pool.pk] = _status(pool, backend, shape, inventory, prices_each)
    return found


def status_of(pool, shape: InstanceType | None, inventory: NodeCount, override=None) -> MachinePoolStatus:
    """One machine pool's status from what `statuses` reads for many (`override`: the backend's price row)."""
    backend = pool.backend
    each = pricing.node_prices(pool.instance_type, pool.spot, shape, override, backend.aws_region or "")
    return _status(pool, backend, shape, inventory, each)


def _status(pool, backend, shape, inventory: NodeCount, each: tuple) -> MachinePoolStatus:
    spec = pool.spec()
    cost = pricing.priced(spec, *each, inventory.total)
    return MachinePoolStatus(
        name=pool.name,
        backend=backend.name,
        provider=backend.machine_provider or "",
        region=backend.aws_region or "",
        spec=spec,
        shape=shape,
        description=pool.description,
        state=pool.state,
        provider_id=pool.provider_id,
        last_answer=pool.last_answer,
        last_answer_at=pool.last_answer_at,
        attempts=pool.attempts,
        inventory=inventory,
        provider_nodes=pool.nodes_now,
        provider_ready=pool.nodes_ready,
        cost=cost,
        node_labels=spec.node_labels(shape),
    )


def _backends(pools) -> dict:
    """Backend id -> the backend (its name, provider and region): the rows' own when they came with them, else
    one query for all."""
    from clusters.models import Backend, MachinePool

    if all(MachinePool.backend.is_cached(pool) for pool in pools):
        return {pool.backend_id: pool.backend for pool in pools}
    wanted = {pool.backend_id for pool in pools}
    return {b.pk: b for b in Backend.objects.filter(pk__in=wanted).only("name", "machine_provider", "aws_region")}


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
