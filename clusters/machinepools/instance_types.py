"""The instance-type catalog as the portal uses it: the shipped types (`catalog.shipped()`) with the
admin's additions and corrections (`clusters.models.InstanceType`) laid over them."""

from __future__ import annotations

from clusters.machinepools import catalog as shipped_catalog
from clusters.machinepools.spec import InstanceType


def catalog() -> dict[str, InstanceType]:
    from clusters.models import InstanceType as InstanceTypeRow

    merged = dict(shipped_catalog.shipped())
    for row in InstanceTypeRow.objects.all():
        merged[row.name] = from_row(row, shipped=merged.get(row.name))
    return merged


def from_row(row, shipped: InstanceType | None = None) -> InstanceType:
    """An admin's `clusters.models.InstanceType` row as the catalog's type; a shipped type it corrects keeps the
    shipped regions (an admin's row has none)."""
    return InstanceType(
        name=row.name,
        vcpu=row.vcpu,
        memory_mib=row.memory_mib,
        arch=row.arch,
        gpu_count=row.gpu_count,
        gpu_model=row.gpu_model,
        gpu_product=row.gpu_product,
        gpu_memory_mib=row.gpu_memory_mib,
        hourly_price=row.hourly_price,
        spot_hourly_price=row.spot_hourly_price,
        price_note=row.note,
        prices_as_of=row.prices_as_of,
        regions=shipped.regions if shipped else (),
    )


def instance_type(name: str) -> InstanceType | None:
    return catalog().get(name)
