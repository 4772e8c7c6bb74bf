"""What a node of an instance type costs per hour, on-demand or spot, and where that figure comes from; what a
machine pool's nodes cost now and at maximum, spot against on-demand (docs/usage.md#cost). Usage cost, the
machine pool admin and the capacity lines all read prices here, so they agree.

A node's price, first found wins:
1. the admin's price for the type on the node's backend (`usage.models.PriceOverride`, read through the hook
   `install_overrides`: usage is above clusters);
2. the instance-type catalog: an admin's row under Clusters › Instance types (with its note and date), else the
   shipped figures: AWS's on-demand price (`instance_types.json`) and, for spot, the shipped spot table
   (`spot_prices.json`, per type and region, each row with its source and the date it was read);
3. spot without a recorded figure: an estimate, the on-demand price × `USAGE_SPOT_PRICE_RATIO`, to the cent;
4. nothing: the source says why.

Every spot figure says whether it is an estimate; a spot price above the on-demand one is never recorded (AWS
charges at most the On-Demand price), so a saving is never negative.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from pathlib import Path

from django.conf import settings

from clusters.machinepools import catalog as shipped_catalog
from clusters.machinepools.spec import InstanceType

SPOT_TABLE = Path(__file__).with_name("spot_prices.json")
CENT = Decimal("0.01")
# The most an hour of one node may be priced at, in USD: above every EC2 instance's on-demand price (the
# largest, u7in-32tb.224xlarge, lists at about $408 an hour), so a typo of a few digits is refused.
MAX_HOURLY_PRICE = Decimal(1000)


@dataclass(frozen=True)
class Price:
    """USD per node-hour (None: unknown), where it comes from, and whether it is an estimate."""

    hourly: Decimal | None
    source: str
    estimate: bool = False


@dataclass(frozen=True)
class SpotRow:
    instance_type: str
    region: str
    hourly_price: Decimal
    source: str  # the source's title, URL and the date it was read
    estimate: bool


@cache
def spot_table() -> dict[tuple[str, str], SpotRow]:
    """The shipped spot table, keyed (instance type, region)."""
    document = json.loads(SPOT_TABLE.read_text())
    sources = document["sources"]
    rows = {}
    for row in document["prices"]:
        cited = sources[row["source"]]
        rows[row["instance_type"], row["region"]] = SpotRow(
            instance_type=row["instance_type"],
            region=row["region"],
            hourly_price=Decimal(row["hourly_price"]),
            source=f"{cited['title']}, read {cited['read_on']}",
            estimate=bool(row["estimate"]),
        )
    return rows


# -- per-backend overrides: usage installs the reader in its ready() ---------------------------------------------

# backend ids → {(backend id, instance type): a row with on_demand_hourly, spot_hourly, note and as_of}
OverrideReader = Callable[[set[int]], dict]
_OVERRIDE_READERS: list[OverrideReader] = []


def install_overrides(reader: OverrideReader) -> None:
    if reader not in _OVERRIDE_READERS:
        _OVERRIDE_READERS.append(reader)


def overrides(backend_ids: set[int]) -> dict:
    """The admins' per-backend prices of these backends, one query per installed reader."""
    found: dict = {}
    for reader in _OVERRIDE_READERS:
        found.update(reader(backend_ids))
    return found


# -- one node ----------------------------------------------------------------------------------------------------


def on_demand_price(instance_type: str, shape: InstanceType | None, override=None) -> Price:
    if override is not None and override.on_demand_hourly is not None:
        return Price(override.on_demand_hourly, f"on-demand price set for this backend{_noted(override)}")
    if shape is None:
        return Price(None, f"no price: instance type {instance_type} is not in the catalog")
    if shape.hourly_price is None:
        return Price(None, f"no price: the catalog sells {instance_type} on no on-demand price")
    return Price(shape.hourly_price, "on-demand price from the instance-type catalog")


def spot_price(instance_type: str, shape: InstanceType | None, override=None, region: str = "") -> Price:
    """The spot price of one node and its source (`region`: the shipped table's row; empty: the catalog's region)."""
    if override is not None and override.spot_hourly is not None:
        return Price(override.spot_hourly, f"spot price set for this backend{_noted(override)}")
    if shape is None:
        return Price(None, f"no price: instance type {instance_type} is not in the catalog")
    if shape.spot_hourly_price is not None:
        return Price(shape.spot_hourly_price, f"spot price from the instance-type catalog{_noted_shape(shape)}")
    region = region or shipped_catalog.region()
    shipped = spot_table().get((instance_type, region))
    if shipped is not None:
        kind = "spot estimate" if shipped.estimate else "spot price"
        return Price(shipped.hourly_price, f"{kind} for {region}: {shipped.source}", shipped.estimate)
    on_demand = on_demand_price(instance_type, shape, override)
    if on_demand.hourly is None:
        return Price(None, f"no spot price: none recorded and {on_demand.source.removeprefix('no price: ')}", True)
    ratio = Decimal(str(settings.USAGE_SPOT_PRICE_RATIO))
    return Price(
        (on_demand.hourly * ratio).quantize(CENT, ROUND_HALF_UP),
        f"spot estimate: the on-demand price × {ratio} (USAGE_SPOT_PRICE_RATIO; no spot price recorded)",
        True,
    )


def node_price(instance_type: str, spot: bool, shape: InstanceType | None, override=None, region: str = "") -> Price:
    if spot:
        return spot_price(instance_type, shape, override, region)
    return on_demand_price(instance_type, shape, override)


def _noted(override) -> str:
    said = [text for text in (override.note, _dated(getattr(override, "as_of", None))) if text]
    return f" ({'; '.join(said)})" if said else ""


def _noted_shape(shape: InstanceType) -> str:
    said = [text for text in (shape.price_note, _dated(shape.prices_as_of)) if text]
    return f" ({'; '.join(said)})" if said else ""


def _dated(day) -> str:
    return f"as of {day.isoformat()}" if day else ""


# -- a machine pool ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolCost:
    """What a machine pool's nodes cost per hour now and at maximum. A spot pool shows its spot price (capped by
    its max price, the most it pays), the on-demand price of the same nodes, and the saving."""

    spot: bool
    on_demand: Price  # one node, on-demand
    spot_each: Price | None  # one node, spot (spot pools only)
    max_price: Decimal | None
    nodes_now: int
    nodes_max: int

    @property
    def each(self) -> Price:
        """What one node is charged: on-demand, or the spot price (never above the pool's max price: above it a
        spot pool gets no node)."""
        if not self.spot:
            return self.on_demand
        price = self.spot_each
        if price.hourly is not None and self.max_price is not None and price.hourly > self.max_price:
            return Price(self.max_price, f"the max price (the spot price is higher: {price.hourly})", price.estimate)
        return price

    @property
    def saving_each(self) -> Decimal | None:
        if not self.spot or self.each.hourly is None or self.on_demand.hourly is None:
            return None
        return max(Decimal(0), self.on_demand.hourly - self.each.hourly)

    @property
    def saving_percent(self) -> int | None:
        saving = self.saving_each
        if saving is None or not self.on_demand.hourly:
            return None
        return int((saving * 100 / self.on_demand.hourly).to_integral_value(ROUND_HALF_UP))

    def as_dict(self) -> dict:
        each, saving = self.each, self.saving_each
        return {
            "capacity_type": "spot" if self.spot else "on-demand",
            "hourly_each": _text(each.hourly),
            "source": each.source,
            "estimate": each.estimate,
            "on_demand_each": _text(self.on_demand.hourly),
            "now": _text(_times(each.hourly, self.nodes_now)),
            "at_max": _text(_times(each.hourly, self.nodes_max)),
            "on_demand_now": _text(_times(self.on_demand.hourly, self.nodes_now)),
            "on_demand_at_max": _text(_times(self.on_demand.hourly, self.nodes_max)),
            "saving_each": _text(saving),
            "saving_percent": self.saving_percent,
        }

    def line(self) -> str:
        """ "$1.05 / $1.58 per hour" (on-demand) or "≈ $0.36 / $0.54 per hour spot (estimate: …); on-demand
        $1.05 / $1.58, saving 65%" — now / at max."""
        each = self.each
        if each.hourly is None:
            return f"price unknown ({each.source})"
        figures = f"${money(each.hourly * self.nodes_now)} / ${money(each.hourly * self.nodes_max)} per hour"
        if not self.spot:
            return figures
        approx = "≈ " if each.estimate else ""
        line = f"{approx}{figures} spot ({each.source})"
        if self.on_demand.hourly is None:
            return f"{line}; no on-demand price to compare"
        od = self.on_demand.hourly
        on_demand = f"on-demand ${money(od * self.nodes_now)} / ${money(od * self.nodes_max)}"
        return f"{line}; {on_demand}, saving {self.saving_percent}%"


def pool_cost(spec, shape: InstanceType | None, nodes_now: int, override=None, region: str = "") -> PoolCost:
    """`spec`: a `MachinePoolSpec`; `override`: the backend's price row for its instance type, if any; `region`:
    the backend's AWS region (the shipped spot table's row; empty: the catalog's region)."""
    return priced(spec, *node_prices(spec.instance_type, spec.spot, shape, override, region), nodes_now)


def node_prices(instance_type: str, spot: bool, shape: InstanceType | None, override=None, region: str = ""):
    """(on-demand, spot or None) price of one node: what `priced` takes, worked out once for the machine pools of
    a page that share the backend, the type and the capacity type (clusters.machinepools.figures)."""
    spot_each = spot_price(instance_type, shape, override, region) if spot else None
    return on_demand_price(instance_type, shape, override), spot_each


def priced(spec, on_demand: Price, spot_each: Price | None, nodes_now: int) -> PoolCost:
    """A machine pool's cost from one node's prices (`node_prices`)."""
    return PoolCost(
        spot=spec.spot,
        on_demand=on_demand,
        spot_each=spot_each if spec.spot else None,
        max_price=spec.max_price if spec.spot else None,
        nodes_now=nodes_now,
        nodes_max=spec.most_nodes,
    )


def money(amount: Decimal) -> str:
    return f"{amount.quantize(CENT, ROUND_HALF_UP)}"


def _times(each: Decimal | None, nodes: int) -> Decimal | None:
    return None if each is None else each * nodes


def _text(amount: Decimal | None) -> str | None:
    return None if amount is None else f"{amount.normalize():f}"


# -- what an admin may record --------------------------------------------------------------------------------------

EC2_LAUNCH = date(2006, 8, 25)  # no EC2 price was read before EC2 existed


def price_problems(on_demand: Decimal | None, spot: Decimal | None, as_of: date | None, today: date) -> dict:
    """{role: why} for prices an admin records, role one of "on_demand", "spot", "as_of"; empty when they are
    fine. A price is positive and at most MAX_HOURLY_PRICE; spot is never above on-demand; the date is neither
    in the future nor before EC2 began."""
    problems = {}
    for role, price in (("on_demand", on_demand), ("spot", spot)):
        if price is None:
            continue
        if price <= 0:
            problems[role] = f"{price} is not a positive USD amount per hour (leave it empty when unknown)"
        elif price > MAX_HOURLY_PRICE:
            problems[role] = (
                f"{price} is above {MAX_HOURLY_PRICE} USD per hour, more than any EC2 instance costs on demand"
            )
    if "spot" not in problems and "on_demand" not in problems and None not in (on_demand, spot) and spot > on_demand:
        problems["spot"] = (
            f"{spot} is above the on-demand price {on_demand}: AWS charges a Spot Instance at most the On-Demand price"
        )
    if as_of is not None and as_of > today:
        problems["as_of"] = f"{as_of.isoformat()} is in the future (today is {today.isoformat()})"
    elif as_of is not None and as_of < EC2_LAUNCH:
        problems["as_of"] = f"{as_of.isoformat()} is before EC2 began ({EC2_LAUNCH.isoformat()})"
    return problems
