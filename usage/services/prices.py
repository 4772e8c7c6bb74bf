"""What a node costs per hour, where that price comes from, and a task attempt's share of it (docs/usage.md#cost).

The price of a node and its source are `clusters.machinepools.pricing`'s (one chain for usage cost, the machine
pool admin and the capacity lines): the admin's override for its instance type on its backend
(`usage.models.PriceOverride`, on-demand or spot, with its note and date), then the instance-type catalog (an
admin's row, else AWS's on-demand price and, for spot, the shipped spot table with each figure's source and date),
then for spot an estimate (the on-demand price × `USAGE_SPOT_PRICE_RATIO`, said as an estimate), else no price
(costs 0, the source says why).

The share rule: an attempt pays its *dominant share* of the node, the largest of its requested GPUs, CPU and
memory over the node's allocatable of each (at most 1). A 2-GPU task on an 8-GPU node pays a quarter of it; a
CPU-only task on a CPU node pays its CPU or memory share, whichever is larger. What no attempt requested is
idle node cost, charged to no one.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from clusters.machinepools import pricing

MICROS = Decimal(1_000_000)
SOURCE_MAX = 255  # TaskAttempt.price_source


@dataclass(frozen=True)
class NodePrice:
    hourly: Decimal | None  # USD per node-hour; None: unknown
    source: str


def node_price(
    backend_id: int, instance_type: str, spot: bool, overrides: dict | None = None, shapes: dict | None = None
) -> NodePrice:
    """The hourly price of one node of `instance_type` on the backend, and where it comes from. `overrides`
    (`backend_overrides`) and `shapes` (the catalog) are read when not given."""
    from clusters.machinepools.instance_types import catalog

    if not instance_type:
        return NodePrice(None, "no price: the node has no node.kubernetes.io/instance-type label")
    if overrides is None:
        overrides = backend_overrides(backend_id)
    shape = (shapes if shapes is not None else catalog()).get(instance_type)
    price = pricing.node_price(instance_type, spot, shape, overrides.get(instance_type))
    return NodePrice(price.hourly, price.source[:SOURCE_MAX])


def backend_overrides(backend_id: int) -> dict:
    from usage.models import PriceOverride

    return {row.instance_type: row for row in PriceOverride.objects.filter(backend_id=backend_id)}


def overrides_of(backend_ids: set[int]) -> dict:
    """{(backend id, instance type): override} for these backends: the reader usage installs in
    `clusters.machinepools.pricing` (one query), so the machine pool pages price as usage cost does."""
    from usage.models import PriceOverride

    rows = PriceOverride.objects.filter(backend_id__in=backend_ids) if backend_ids else []
    return {(row.backend_id, row.instance_type): row for row in rows}


def dominant_share(asked: dict[str, int], allocatable: dict[str, int]) -> Decimal:
    """The largest of asked/allocatable over gpu, cpu and memory, at most 1; 0 when the node offers nothing asked."""
    shares = [
        Decimal(asked.get(name, 0)) / Decimal(allocatable[name])
        for name in ("gpu", "cpu", "memory")
        if allocatable.get(name) and asked.get(name)
    ]
    return min(Decimal(1), max(shares, default=Decimal(0)))


def hourly_cost_micros(price: NodePrice, share: Decimal) -> int:
    """The attempt's micro-dollars per hour: its share of the node's hourly price, rounded to the micro-dollar."""
    if price.hourly is None:
        return 0
    return int((price.hourly * share * MICROS).to_integral_value())
