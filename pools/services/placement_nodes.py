"""The member nodes of platforms as the placement engine sees them: which would take a pod now, and why
not the others, with the would-be node of each scale-from-zero machine pool (marked). Shared by the submit
dry run (workflows) and the admin's pod preview."""

from __future__ import annotations

from pools.engine import EngineError
from pools.engine.placement import NodeInfo, place
from pools.engine.placement_fit import parse_allocatable, sum_requests
from pools.models import NodeMembership, Platform
from pools.services.machine_pool_shapes import would_be_by_platform


def placement_of(pod: dict, nodes: list[NodeInfo]) -> dict:
    """`{"fits": [node, ...], "rejected": {node: [reason, ...]}}` for one resolved pod."""
    verdicts = place(pod, nodes)
    result = {
        "fits": sorted(v.node for v in verdicts if v.fits),
        "rejected": {v.node: v.reasons for v in verdicts if not v.fits},
    }
    would_be = {v.node: v.would_be for v in verdicts if v.would_be}
    if would_be:
        result["would_be"] = would_be  # scale from zero: these are not nodes yet
    return result


def placement_candidates(platform_ids: set[int]) -> dict[int, list[NodeInfo]]:
    """Member nodes of each platform with allocatable, requests and pod count (one query for all)."""
    found: dict[int, list[NodeInfo]] = {}
    rows = NodeMembership.objects.filter(platform_id__in=platform_ids).values_list(
        "platform_id",
        "node__name",
        "node__labels",
        "node__taints",
        "node__unschedulable",
        "node__allocatable",
        "node__requested_workload",
        "node__requested_other",
        "node__workload_pods",
        "node__other_pods",
    )
    for platform_id, name, labels, taints, unschedulable, allocatable, workload, other, *pod_counts in rows:
        try:
            found.setdefault(platform_id, []).append(
                NodeInfo(
                    name=name,
                    labels=labels or {},
                    taints=taints or [],
                    unschedulable=unschedulable,
                    allocatable=parse_allocatable(allocatable or {}, "status.allocatable"),
                    requested=sum_requests([workload or {}, other or {}]),
                    pod_count=sum(pod_counts),
                )
            )
        except EngineError:
            continue  # a malformed stored node is no candidate (membership logs it)
    platforms = Platform.objects.filter(pk__in=platform_ids).select_related("pool")
    for platform_id, would_be in would_be_by_platform(platforms).items():
        found.setdefault(platform_id, []).extend(node.node_info() for node in would_be)
    return found
