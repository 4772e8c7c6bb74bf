"""Quota amounts: integers in scheduler units (gpu devices, cpu millicores, memory bytes), or Kubernetes
quantities as people write them ("8", "500m", "64Gi"), which the doors and documents accept."""

from __future__ import annotations

from decimal import Decimal

from configs.errors import ConfigError
from pools.engine.placement_fit import to_scheduler_units
from pools.engine.quantity import QuantityError, human, parse_quantity

MAX_AMOUNT = 2**62  # fits the BigIntegerField columns with room for sums
_K8S_NAME = {"gpu": "nvidia.com/gpu", "cpu": "cpu", "memory": "memory"}
UNIT_NAMES = {"gpu": "GPUs", "cpu": "millicores", "memory": "bytes"}


def amount(resource: str, value: object, field: str) -> int:
    """`value` in scheduler units: an integer is taken as it is (already in units), a string is a Kubernetes
    quantity ("8" cpu = 8000 millicores, "64Gi" = 68719476736 bytes). Negative, fractional GPUs, or beyond
    2^62: a ConfigError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(
            f"must be a non-negative integer ({UNIT_NAMES[resource]}) or a quantity such as {_EXAMPLE[resource]!r}",
            field=field,
            value=value,
        )
    if isinstance(value, int):
        units = value
    else:
        try:
            quantity = parse_quantity(value.strip()).value
        except QuantityError:
            raise ConfigError(
                f"is not a quantity; write it like {_EXAMPLE[resource]!r}", field=field, value=value
            ) from None
        if resource == "gpu" and quantity != quantity.to_integral_value():
            raise ConfigError("GPUs are whole devices", field=field, value=value)
        units = to_scheduler_units(_K8S_NAME[resource], Decimal(quantity))
    if units < 0:
        raise ConfigError("must not be negative", field=field, value=value)
    if units > MAX_AMOUNT:
        raise ConfigError(f"is larger than {MAX_AMOUNT}", field=field, value=value)
    return units


def show(resource: str, units: int | None) -> str:
    """Human figures: '8' GPUs, '66.5' cores, '64Gi' (the one formatter, `quantity.human`); None is '-'."""
    return human(resource, units)


_EXAMPLE = {"gpu": "8", "cpu": "500m", "memory": "64Gi"}
