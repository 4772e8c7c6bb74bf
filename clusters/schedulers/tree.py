"""The translation's input: node pools, and departments → projects with quotas per node pool and resource.

Units are the portal's: `gpu` in devices, `cpu` in millicores, `memory` in bytes (what `quotas` stores).
A (team, node pool, resource) without a `Quota` is the zero quota every team has in every node pool:
nothing guaranteed, no cap, weight 1, lent when unused.

Object names: Kubernetes names are lowercase DNS labels, portal names are not (`Vision_Team`).
`object_name` keeps a name that already is one and otherwise lowers it, replaces what is not allowed with
`-` and appends a hash of the original, so two portal names never share one object name by accident.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

RESOURCES = ("gpu", "cpu", "memory")
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "pool-portal"
BACKEND_LABEL = "pool-portal/backend"
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_NOT_ALLOWED = re.compile(r"[^a-z0-9-]+")
MAX_NAME = 63  # a label value: queue names travel in pod labels


@dataclass(frozen=True)
class Quota:
    deserved: int = 0
    limit: int | None = None  # None: no cap
    weight: int = 1
    lend: bool = True  # False: its unused deserved is never lent to others (Kueue: lendingLimit 0)


ZERO = Quota()


@dataclass(frozen=True)
class NodePool:
    """`node_labels`: the label selector of a label node pool; `node_names`: the members of a node pool
    chosen otherwise (platform); `default`: the backend's Default node pool (every node no other claims)."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_names: tuple[str, ...] = ()
    capacity: Mapping[str, int] = field(default_factory=dict)
    over_quota: bool = True
    default: bool = False


Quotas = Mapping[str, Mapping[str, Quota]]  # node pool name -> resource -> Quota


@dataclass(frozen=True)
class Project:
    name: str
    quotas: Quotas = field(default_factory=dict)
    priority: int = 0  # higher: served first for over-quota resources


@dataclass(frozen=True)
class Department:
    name: str
    quotas: Quotas = field(default_factory=dict)
    projects: tuple[Project, ...] = ()


@dataclass(frozen=True)
class QuotaTree:
    """One backend's quotas. `namespace`: the backend's workload namespace (Kueue's LocalQueues live there)."""

    backend: str
    namespace: str
    node_pools: tuple[NodePool, ...] = ()
    departments: tuple[Department, ...] = ()

    def node_pool(self, name: str) -> NodePool | None:
        return next((pool for pool in self.node_pools if pool.name == name), None)


def quota_of(team: Project | Department, node_pool: str, resource: str) -> Quota:
    return (team.quotas.get(node_pool) or {}).get(resource, ZERO)


def object_name(name: str) -> str:
    """`name` as a DNS-1123 label of at most 63 characters; see the module docstring."""
    if _LABEL.match(name) and len(name) <= MAX_NAME:
        return name
    cleaned = _NOT_ALLOWED.sub("-", name.lower()).strip("-") or "x"
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME - 9].rstrip('-')}-{digest}"


def joined_name(*parts: str) -> str:
    """Several portal names as one object name (`<pool>-<project>`), made unique the same way."""
    plain = "-".join(parts)
    if all(_LABEL.match(p) for p in parts) and len(plain) <= MAX_NAME:
        return plain
    return object_name("/".join(parts))


def managed_labels(tree: QuotaTree) -> dict[str, str]:
    """Labels on every object the portal writes: they find its objects again (stale ones to delete)."""
    return {MANAGED_BY_LABEL: MANAGED_BY, BACKEND_LABEL: object_name(tree.backend)}
