"""The one interface the reconciler talks to, whoever provisions the machines (ROSA, Karpenter).

A provider lists what it holds (`observe`: every machine pool it has, managed by the portal or not, in the
portal's terms), and creates, updates and deletes one pool. Each failure is a `ProviderError`: `transient`
(network, timeouts, 408/429/5xx: try again later, nothing is lost) or permanent (the provider refused, in its
own words: shown on the pool until its definition changes).

A provider keeps only some of a pool's fields (`fields`): Karpenter has no minimum node count, no spot price
cap and no root volume in a NodePool, so those are neither sent nor compared there.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from clusters.machinepools.spec import MachinePoolSpec
from portal.errors import DomainError

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "pool-portal"  # what the portal writes, and the only pools it ever deletes
ALL_FIELDS = (
    "instance_type",
    "autoscaling",
    "replicas",
    "min_replicas",
    "max_replicas",
    "labels",
    "taints",
    "spot",
    "max_price",
    "disk_size_gib",
    "availability_zones",
    "subnets",
    "security_groups",
    "aws_tags",
    "requirements",
)
# What OCM keeps of a machine pool (the Karpenter-only fields are refused before, provider_limits).
ROSA_FIELDS = tuple(name for name in ALL_FIELDS if name != "requirements")
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class ProviderError(DomainError):
    status = 502  # at the REST API: the upstream provider failed
    code = "provider_error"

    def __init__(self, reason: str, *, transient: bool = False, provider_status: int = 0, field: str = "") -> None:
        super().__init__(reason, field=field)
        self.transient = transient
        self.provider_status = provider_status

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Observed:
    """One machine pool as the provider holds it. `nodes_now` None: the provider does not count nodes (the
    inventory does)."""

    spec: MachinePoolSpec
    provider_id: str
    managed: bool
    nodes_now: int | None = None


class Provider(Protocol):
    name: str
    fields: tuple[str, ...]

    def observe(self) -> dict[str, Observed]: ...

    def create(self, spec: MachinePoolSpec) -> Observed: ...

    def update(self, spec: MachinePoolSpec, observed: Observed) -> Observed: ...

    def delete(self, observed: Observed) -> None: ...

    def close(self) -> None: ...


def differences(desired: MachinePoolSpec, observed: MachinePoolSpec, fields: tuple[str, ...]) -> list[str]:
    """What the provider holds that the portal does not ask for, one "field: provider X, portal Y" each."""
    wanted, held = _comparable(desired, fields), _comparable(observed, fields)
    return [
        _difference(name, held.get(name), wanted.get(name))
        for name in ALL_FIELDS
        if (name in wanted or name in held) and wanted.get(name) != held.get(name)
    ]


def _difference(name: str, held, wanted) -> str:
    """One field's difference; of a mapping (labels) only the keys that differ, as key=value (or "none")."""
    if isinstance(held, dict) or isinstance(wanted, dict):
        held, wanted = held or {}, wanted or {}
        keys = sorted(key for key in held.keys() | wanted.keys() if held.get(key) != wanted.get(key))
        return f"{name}: provider {_pairs(held, keys)}, portal {_pairs(wanted, keys)}"
    return f"{name}: provider {_show(held)}, portal {_show(wanted)}"


def _pairs(mapping: dict, keys: list[str]) -> str:
    return ", ".join(f"{key}={mapping[key]}" if key in mapping else f"{key} unset" for key in keys)


def _comparable(spec: MachinePoolSpec, fields: tuple[str, ...]) -> dict:
    shown = {}
    for name in fields:
        if name in ("min_replicas", "max_replicas") and not spec.autoscaling:
            continue
        if name == "replicas" and spec.autoscaling:
            continue
        if name == "max_price" and not spec.spot:
            continue
        value = getattr(spec, name)
        if name == "taints":
            value = sorted((t.key, t.value, t.effect) for t in value)
        elif name in ("availability_zones", "subnets", "security_groups"):
            value = sorted(value)
        elif name == "max_price" and value is not None:
            value = Decimal(str(value)).normalize()
        shown[name] = value
    return shown


def _show(value) -> str:
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return "[" + ", ".join(f"{k}={v}:{e}" for k, v, e in value) + "]"
    return "none" if value is None else str(value)
