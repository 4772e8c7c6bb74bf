"""What a node costs per hour, where that price comes from, and a task attempt's share of it (docs/usage.md#cost).

The price of a node, first found wins:
1. the admin's override for its instance type on its backend (`usage.models.PriceOverride`), on-demand or spot;
2. the instance-type catalog (`clusters.machinepools.instance_types.catalog()`: the shipped AWS on-demand price,
   or an admin's correction; a spot price only where an admin recorded one);
3. for spot without a recorded price, an estimate: the on-demand price × `USAGE_SPOT_PRICE_RATIO` (default 0.35),
   said as an estimate in the source;
4. nothing: a node without an instance-type label, or a type the catalog does not know, costs 0, and the
   source says why.

The share rule: an attempt pays its *dominant share* of the node, the largest of its requested GPUs, CPU and
memory over the node's allocatable of each (at most 1). A 2-GPU task on an 8-GPU node pays a quarter of it; a
CPU-only task on a CPU node pays its CPU or memory share, whichever is larger. What no attempt requested is
idle node cost, charged to no one.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

MICROS = Decimal(1_000_000)


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
    override = overrides.get(instance_type)
    if override is not None:
        price = override.spot_hourly if spot else override.on_demand_hourly
        if price is not None:
            kind = "spot" if spot else "on-demand"
            note = f" ({override.note})" if override.note else ""
            return NodePrice(price, f"{kind} price set for this backend{note}")
    shape = (shapes if shapes is not None else catalog()).get(instance_type)
    if shape is None:
        return NodePrice(None, f"no price: instance type {instance_type} is not in the catalog")
    if spot and shape.spot_hourly_price is not None:
        return NodePrice(shape.spot_hourly_price, "spot price from the instance-type catalog")
    if shape.hourly_price is None:
        return NodePrice(None, f"no price: the catalog sells {instance_type} on no on-demand price")
    if spot:
        ratio = Decimal(str(settings.USAGE_SPOT_PRICE_RATIO))
        return NodePrice(
            (shape.hourly_price * ratio).quantize(Decimal("0.0001")),
            f"spot estimate: the catalog's on-demand price × {ratio} (USAGE_SPOT_PRICE_RATIO; no spot price recorded)",
        )
    return NodePrice(shape.hourly_price, "on-demand price from the instance-type catalog")


def backend_overrides(backend_id: int) -> dict:
    from usage.models import PriceOverride

    return {row.instance_type: row for row in PriceOverride.objects.filter(backend_id=backend_id)}


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
