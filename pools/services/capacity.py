"""Capacity of pools and platforms: allocatable, used and free cpu, memory, GPUs and ephemeral storage.

Per node: allocatable = status.allocatable; used = requests of the non-terminal pods bound to it (portal
workloads and others); free = allocatable - used, never below zero. A pool or platform sums its member
nodes; totals count each node once, however many pools or platforms it serves. Unlike OSMO, the
control sidecar's requests are not subtracted from allocatable (a portal pod's sidecar is in its
requests once it runs).

Three queries whatever the number of nodes: the names asked for, the memberships, the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Subquery

from clusters.models import CAPACITY_COLUMNS, Node
from clusters.units import show
from configs.errors import ConfigNotFound
from pools.errors import PoolNotFound
from pools.models import NodeMembership, Platform, Pool
from pools.services.membership_reads import membership_filter, resource_type

UNITS = {"cpu": "millicores", "memory": "bytes", "nvidia.com/gpu": "devices", "ephemeral-storage": "bytes"}
NODE_COLUMNS = (
    "pk",
    "name",
    "backend__name",
    "gpu_product",
    "ready",
    "unschedulable",
    "taints",
    "labels",
    "conditions",
    *(f"{c}_allocatable" for c in CAPACITY_COLUMNS.values()),
    *(f"{c}_used" for c in CAPACITY_COLUMNS.values()),
)


@dataclass
class Figures:
    """Summed capacity of a set of nodes (scheduler units)."""

    nodes: int = 0
    allocatable: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAPACITY_COLUMNS, 0))
    used: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAPACITY_COLUMNS, 0))
    free: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAPACITY_COLUMNS, 0))

    def add(self, node: NodeFigures) -> None:
        self.nodes += 1
        for name in CAPACITY_COLUMNS:
            self.allocatable[name] += node.allocatable[name]
            self.used[name] += node.used[name]
            self.free[name] += node.free[name]

    def as_dict(self) -> dict:
        return {
            "nodes": self.nodes,
            "allocatable": dict(self.allocatable),
            "used": dict(self.used),
            "free": dict(self.free),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Figures:
        """`as_dict` read back (a stored summary); a resource it lacks (a column added since) counts 0."""
        figures = cls(nodes=data["nodes"])
        for kind in ("allocatable", "used", "free"):
            getattr(figures, kind).update({name: data[kind].get(name, 0) for name in CAPACITY_COLUMNS})
        return figures


@dataclass
class NodeFigures:
    pk: int
    name: str
    backend: str
    gpu_product: str
    schedulable: bool
    allocatable: dict[str, int]
    used: dict[str, int]
    free: dict[str, int]
    taints: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    conditions: list = field(default_factory=list)
    pools: dict[str, list[str]] = field(default_factory=dict)  # every pool/platform it serves
    asked_pools: dict[str, list[str]] = field(default_factory=dict)  # those of the pools/platforms asked for
    pool_count: int = 0

    @property
    def resource_type(self) -> str:
        return resource_type(self.pool_count)

    def as_dict(self) -> dict:
        return {
            "node": self.name,
            "backend": self.backend,
            "resource_type": self.resource_type,
            "gpu_product": self.gpu_product,
            "schedulable": self.schedulable,
            "pools": self.pools,
            "allocatable": self.allocatable,
            "used": self.used,
            "free": self.free,
        }


@dataclass
class CapacityReport:
    pools: dict[str, dict] = field(default_factory=dict)  # name -> {"backend", "figures", "platforms"}
    total: Figures = field(default_factory=Figures)
    nodes: list[NodeFigures] = field(default_factory=list)

    def as_dict(self, with_nodes: bool = True) -> dict:
        data = {
            "units": dict(UNITS),
            "pools": {
                name: {
                    "backend": entry["backend"],
                    **entry["figures"].as_dict(),
                    "platforms": {p: f.as_dict() for p, f in entry["platforms"].items()},
                }
                for name, entry in self.pools.items()
            },
            "total": self.total.as_dict(),
        }
        if with_nodes:
            data["resources"] = [node.as_dict() for node in self.nodes]
        return data


def capacity(pools: list[str] | None = None, platforms: list[str] | None = None) -> CapacityReport:
    """Capacity of `pools` (all when empty), restricted to `platforms` when given. Unknown names raise."""
    pools, platforms = _check_names(pools or [], platforms or [])
    scope = NodeMembership.objects.filter(membership_filter(pools, platforms))
    # every membership of the nodes in scope (their SHARED/RESERVED type counts all their pools)
    rows = list(
        NodeMembership.objects.filter(node_id__in=Subquery(scope.values("node_id")))
        .values_list("node_id", "pool__name", "platform__name", "pool__backend__name")
        .order_by("pool__name", "platform__name")
    )
    nodes = {
        row[0]: _node_figures(row)
        for row in Node.objects.filter(pk__in=Subquery(scope.values("node_id")))
        .order_by("name")
        .values_list(*NODE_COLUMNS)
    }

    def in_scope(pool: str, platform: str) -> bool:
        return (not pools or pool in pools) and (not platforms or platform in platforms)

    report = CapacityReport()
    for name in pools or sorted({pool for _, pool, platform, _ in rows if in_scope(pool, platform)}):
        report.pools[name] = {"backend": "", "figures": Figures(), "platforms": {}}
    counted: dict[str, set[int]] = {}
    for node_id, pool, platform, backend in rows:
        node = nodes[node_id]
        node.pools.setdefault(pool, []).append(platform)
        if not in_scope(pool, platform):
            continue
        node.asked_pools.setdefault(pool, []).append(platform)
        entry = report.pools[pool]
        entry["backend"] = backend
        entry["platforms"].setdefault(platform, Figures()).add(node)
        if node_id not in counted.setdefault(pool, set()):
            counted[pool].add(node_id)
            entry["figures"].add(node)
    for node in nodes.values():
        node.pool_count = len(node.pools)
        report.total.add(node)
        report.nodes.append(node)
    return report


def pool_totals(pool_ids: list[int]) -> dict[int, Figures]:
    """Per pool, each member node once (for lists of pools): one query, summed by the database (a fleet's 50,000
    nodes and their memberships are no rows to bring into Python: docs/scale.md)."""
    totals = {pk: Figures() for pk in pool_ids}
    if not pool_ids:
        return totals
    node, membership = Node._meta.db_table, NodeMembership._meta.db_table
    marks = ", ".join(["%s"] * len(pool_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.pool_id, COUNT(*), {_sums()} FROM (SELECT DISTINCT pool_id, node_id FROM {membership} "
            f"WHERE pool_id IN ({marks})) m JOIN {node} n ON n.id = m.node_id GROUP BY m.pool_id",
            list(pool_ids),
        )
        for pool_id, count, *amounts in cursor.fetchall():
            totals[pool_id] = _figures(count, amounts)
    return totals


def _sums(node: str = "n") -> str:
    """allocatable, used and free (never below zero) summed, per capacity column, in CAPACITY_COLUMNS' order."""
    sums = []
    for column in CAPACITY_COLUMNS.values():
        allocatable, used = f"{node}.{column}_allocatable", f"{node}.{column}_used"
        sums += [
            f"SUM({allocatable})",
            f"SUM({used})",
            f"SUM(CASE WHEN {allocatable} > {used} THEN {allocatable} - {used} ELSE 0 END)",
        ]
    return ", ".join(sums)


def _figures(count: int, amounts) -> Figures:
    figures = Figures(nodes=count)
    for index, name in enumerate(CAPACITY_COLUMNS):
        allocatable, used, free = amounts[3 * index : 3 * index + 3]
        figures.allocatable[name], figures.used[name], figures.free[name] = (
            int(allocatable or 0),
            int(used or 0),
            int(free or 0),
        )
    return figures


def platform_totals(pool_ids: list[int]) -> tuple[dict[int, Figures], dict[int, set[str]]]:
    """Per platform of the pools, its member nodes summed, and the GPU products among them ("" for none): two
    queries, summed by the database (the catalog's cards; a node serves a platform once: unique_node_platform).
    Portable SQL: `make dev` runs on SQLite, which has no array_agg."""
    totals: dict[int, Figures] = {}
    products: dict[int, set[str]] = {}
    if not pool_ids:
        return totals, products
    node, membership = Node._meta.db_table, NodeMembership._meta.db_table
    marks = ", ".join(["%s"] * len(pool_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.platform_id, COUNT(*), {_sums()} FROM {membership} m JOIN {node} n ON n.id = m.node_id "
            f"WHERE m.pool_id IN ({marks}) GROUP BY m.platform_id",
            list(pool_ids),
        )
        for platform_id, count, *amounts in cursor.fetchall():
            totals[platform_id] = _figures(count, amounts)
    found = NodeMembership.objects.filter(pool_id__in=pool_ids).values_list("platform_id", "node__gpu_product")
    for platform_id, product in found.distinct():
        products.setdefault(platform_id, set()).add(product or "")
    return totals, products


def node_capacity(name: str) -> CapacityReport:
    """The nodes called `name` (one per backend that has one), each with every pool/platform it serves, in
    and out of pools (OSMO's `GET /api/resources/{name}`): two queries."""
    if "\x00" in name:  # PostgreSQL refuses NUL in text: no node has one
        return CapacityReport()
    nodes = {row[0]: _node_figures(row) for row in Node.objects.filter(name=name).values_list(*NODE_COLUMNS)}
    rows = (
        NodeMembership.objects.filter(node_id__in=list(nodes))
        .values_list("node_id", "pool__name", "platform__name")
        .order_by("pool__name", "platform__name")
    )
    for node_id, pool, platform in rows:
        nodes[node_id].pools.setdefault(pool, []).append(platform)
        nodes[node_id].asked_pools.setdefault(pool, []).append(platform)
    report = CapacityReport()
    for node in sorted(nodes.values(), key=lambda node: node.backend):
        node.pool_count = len(node.pools)
        report.total.add(node)
        report.nodes.append(node)
    return report


def _node_figures(row: tuple) -> NodeFigures:
    pk, name, backend, gpu_product, ready, unschedulable, taints, labels, conditions, *amounts = row
    count = len(CAPACITY_COLUMNS)
    allocatable = dict(zip(CAPACITY_COLUMNS, amounts[:count], strict=True))
    used = dict(zip(CAPACITY_COLUMNS, amounts[count:], strict=True))
    free = {name_: max(0, allocatable[name_] - used[name_]) for name_ in CAPACITY_COLUMNS}
    schedulable = ready and not unschedulable
    return NodeFigures(
        pk,
        name,
        backend,
        gpu_product,
        schedulable,
        allocatable,
        used,
        free,
        taints or [],
        labels or {},
        conditions or [],
    )


def _check_names(pools: list[str], platforms: list[str]) -> tuple[list[str], list[str]]:
    pools = sorted(dict.fromkeys(p for p in pools if p))
    platforms = sorted(dict.fromkeys(p for p in platforms if p))
    if pools:
        # PostgreSQL refuses NUL in text: such a name cannot exist, and must not reach the query
        known = set(Pool.objects.filter(name__in=[p for p in pools if "\x00" not in p]).values_list("name", flat=True))
        missing = [name for name in pools if name not in known]
        if missing:
            raise PoolNotFound.named(missing[0], field="pools")
    if platforms:
        query = Platform.objects.filter(name__in=[p for p in platforms if "\x00" not in p])
        if pools:
            query = query.filter(pool__name__in=pools)
        known = set(query.values_list("name", flat=True))
        missing = [name for name in platforms if name not in known]
        if missing:
            where = f" in pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}" if pools else ""
            raise ConfigNotFound(f"no platform named {missing[0]!r}{where}", field="platforms", value=missing[0])
    return pools, platforms


# ------------------------------------------------------------------------------------------ display


def used_of(figures_used: dict[str, int], figures_allocatable: dict[str, int], name: str) -> str:
    return f"{show(name, figures_used[name])}/{show(name, figures_allocatable[name])}"
