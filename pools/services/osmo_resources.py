"""OSMO's per-node fields of `GET /api/resources` (its `ResourcesEntry`), as `osmo resource list` reads them.

The portal keeps scheduler units (millicores, bytes); OSMO's client parses Kubernetes-style strings: cpu and
gpu with `float()`, memory and storage as `<number><unit>` (no unit = bytes) converted to GiB. So cpu is
written in cores (`"7.5"`), memory and storage in `Ki` when whole kibibytes (else bytes), gpu as a count.
Keys are OSMO's resource names (`storage`, `cpu`, `memory`, `gpu`), not Kubernetes' (`ephemeral-storage`,
`nvidia.com/gpu`).

`config_fields[pool][platform]` is what `osmo resource info` prints as the platform's task configuration
(`host_network`, `privileged`, `default_mounts`: the mount paths its templates give every container,
`allowed_mounts`); `label_fields` the node's labels; `conditions` the types of its conditions that hold
(status True, as `Ready`).

Differences, on purpose (docs/differences-from-osmo.md): `usage_fields` counts every non-terminal pod on the
node (portal workloads and others), so `non_workflow_usage_fields` is empty; the per-platform allocatable is
the node's allocatable (the control sidecar's requests are not subtracted, see `pools.services.capacity`).
"""

from __future__ import annotations

from pools.models import Platform
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


PlatformConfigs = dict[str, dict[str, dict]]


def platform_configs(pools: set[str]) -> PlatformConfigs:
    """OSMO's `config_fields` of every platform of `pools`, `{pool: {platform: {...}}}`: one query."""
    rows = Platform.objects.filter(pool__name__in=sorted(pools)).values_list(
        "pool__name", "name", "host_network_allowed", "privileged_allowed", "compiled__default_mounts", "allowed_mounts"
    )
    configs: PlatformConfigs = {}
    for pool, platform, host_network, privileged, default_mounts, allowed_mounts in rows:
        configs.setdefault(pool, {})[platform] = {
            "host_network": host_network,
            "privileged": privileged,
            "default_mounts": list(default_mounts or []),
            "allowed_mounts": list(allowed_mounts or []),
        }
    return configs


def _config_fields(pools: dict[str, list[str]], configs: PlatformConfigs) -> dict:
    return {
        pool: {platform: configs[pool][platform] for platform in platforms if platform in configs.get(pool, {})}
        for pool, platforms in pools.items()
    }


def _conditions(node: NodeFigures) -> list[str]:
    return [c["type"] for c in node.conditions if isinstance(c, dict) and c.get("status") == "True" and c.get("type")]


def resource_entry(node: NodeFigures, configs: PlatformConfigs | None = None) -> dict:
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
        "conditions": _conditions(node),
        "label_fields": dict(node.labels),
        "config_fields": _config_fields(node.asked_pools, configs or {}),
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
    """The report (`CapacityReport.as_dict`) with OSMO's fields merged into each node of `resources`: one more
    query (the platforms' task configurations) when nodes are answered."""
    data = report.as_dict(with_nodes=False)
    if with_nodes:
        configs = platform_configs({pool for node in report.nodes for pool in node.asked_pools})
        data["resources"] = [{**node.as_dict(), **resource_entry(node, configs)} for node in report.nodes]
    return data
