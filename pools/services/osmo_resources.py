"""OSMO's per-node fields of `GET /api/resources` (its `ResourcesEntry`), as `osmo resource list` reads them.

The portal keeps scheduler units (millicores, bytes); OSMO's client parses Kubernetes-style strings: cpu and
gpu with `float()`, memory and storage as `<number><unit>` (no unit = bytes) converted to GiB. So cpu is
written in cores (`"7.5"`), memory and storage in `Ki` when whole kibibytes (else bytes), gpu as a count.
Keys are OSMO's resource names (`storage`, `cpu`, `memory`, `gpu`), not Kubernetes' (`ephemeral-storage`,
`nvidia.com/gpu`).

Differences, on purpose (docs/differences-from-osmo.md): `usage_fields` counts every non-terminal pod on the
node (portal workloads and others), so `non_workflow_usage_fields` is empty; the per-platform allocatable is
the node's allocatable (the control sidecar's requests are not subtracted, see `pools.services.capacity`).
"""

from __future__ import annotations

from pools.services.capacity import CapacityReport, NodeFigures

# OSMO's name for each resource, in OSMO's order (common.ALLOCATABLE_RESOURCES_LABELS), and the portal's key
OSMO_NAMES = {"storage": "ephemeral-storage", "cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}
GIB = 2**30


def quantity(name: str, amount: int) -> str:
    """A scheduler-unit amount (`name` a portal key) as the Kubernetes-style string OSMO's client parses."""
    if name == "cpu":
        return f"{amount / 1000:g}" if amount % 1000 else str(amount // 1000)
    if name in ("memory", "ephemeral-storage"):
        return f"{amount // 1024}Ki" if amount % 1024 == 0 else str(amount)
    return str(amount)


def osmo_fields(figures: dict[str, int]) -> dict[str, str]:
    """`{"storage": …, "cpu": …, "memory": …, "gpu": …}` from a portal figures dict."""
    return {osmo: quantity(portal, figures.get(portal, 0)) for osmo, portal in OSMO_NAMES.items()}


def resource_entry(node: NodeFigures) -> dict:
    """OSMO's fields for one node; `pool/platform` and the per-platform maps name the pools asked for."""
    allocatable = osmo_fields(node.allocatable)
    available = osmo_fields(node.free)
    pairs = [f"{pool}/{platform}" for pool, platforms in node.asked_pools.items() for platform in platforms]
    return {
        "hostname": node.name,
        "exposed_fields": {
            "node": node.name,
            "pool/platform": pairs,
            "storage": str(node.allocatable["ephemeral-storage"] // GIB),
            "cpu": allocatable["cpu"],
            "memory": str(node.allocatable["memory"] // GIB),
            "gpu": allocatable["gpu"],
        },
        "taints": node.taints,
        "allocatable_fields": allocatable,
        "usage_fields": osmo_fields(node.used),
        "non_workflow_usage_fields": {},
        "platform_allocatable_fields": _per_platform(node.asked_pools, allocatable),
        "platform_available_fields": _per_platform(node.asked_pools, available),
        "pool_platform_labels": {pool: list(platforms) for pool, platforms in node.asked_pools.items()},
    }


def _per_platform(pools: dict[str, list[str]], fields: dict[str, str]) -> dict[str, dict[str, dict[str, str]]]:
    return {pool: {platform: dict(fields) for platform in platforms} for pool, platforms in pools.items()}


def answer(report: CapacityReport, with_nodes: bool = True) -> dict:
    """The report (`CapacityReport.as_dict`) with OSMO's fields merged into each node of `resources`."""
    data = report.as_dict(with_nodes=False)
    if with_nodes:
        data["resources"] = [{**node.as_dict(), **resource_entry(node)} for node in report.nodes]
    return data
