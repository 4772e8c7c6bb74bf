"""Which nodes a node pool's selector would take, from the live inventory, before it is saved: the admin's node
pool form shows it (quotas.admin_form) for the selector as typed.

It claims as `quotas.services.membership` does (label node pools first, then platform node pools, ties by
name, the rest to the Default), with the node pool as the form says in place of the saved one, and reads
nothing it writes. Each node taken names the node pool it is in now, so a move out of the Default reads as
one; a node that matches but that another node pool would keep (claimed first), and one held by another
non-Default node pool (the save refuses: each node is in one node pool), are listed apart.

Four queries whatever the number of nodes: the backend's node pools, its nodes, their platform memberships
(only for a platform selector or platform node pools), their current node pools.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusters.models import Node
from pools.models import NodeMembership
from quotas.models import NodePool, NodePoolMember, SelectorKind
from quotas.services.membership import claim

SHOWN = 200  # nodes listed by name at most; the counts cover them all
CANDIDATE = -1  # the pk the node pool as typed stands under while claims are computed


@dataclass(frozen=True)
class PreviewNode:
    name: str
    gpus: int
    now_in: str  # the node pool it is in now ("" when none yet: a node the last pass has not placed)


@dataclass
class SelectorPreview:
    backend: str
    total: int  # the backend's nodes
    taken: list[PreviewNode] = field(default_factory=list)  # what the node pool would hold
    kept: list[tuple[PreviewNode, str]] = field(default_factory=list)  # matches, but another claims it first
    held: list[PreviewNode] = field(default_factory=list)  # taken from another non-Default node pool: refused

    @property
    def gpus(self) -> int:
        return sum(node.gpus for node in self.taken)


def preview(backend_id: int, backend_name: str, name: str, selector: dict) -> SelectorPreview:
    """The nodes of the backend that node pool `name` with `selector` (parsed: `{"kind", ...}`) would hold."""
    candidate = NodePool(
        pk=CANDIDATE,
        name=name,
        selector_kind=selector["kind"],
        label_key=selector.get("key", ""),
        label_value=selector.get("value", ""),
        pool_name=selector.get("pool", ""),
        platform_name=selector.get("platform", ""),
    )
    others = [p for p in NodePool.objects.filter(backend_id=backend_id) if p.name != name]
    if candidate.selector_kind == SelectorKind.DEFAULT:
        others = [p for p in others if p.selector_kind != SelectorKind.DEFAULT]
        default = candidate
    else:
        default = next((p for p in others if p.selector_kind == SelectorKind.DEFAULT), NodePool(pk=0, name=""))
    pools = [*others, candidate]
    labelled = sorted((p for p in pools if p.selector_kind == SelectorKind.LABEL), key=lambda p: p.name)
    by_platform = sorted((p for p in pools if p.selector_kind == SelectorKind.PLATFORM), key=lambda p: p.name)
    names = {p.pk: p.name for p in pools if p.pk is not None}
    columns = ("pk", "name", "labels", "gpu_allocatable")
    nodes = list(Node.objects.filter(backend_id=backend_id).order_by("name").values_list(*columns))
    platforms: dict[int, set[tuple[str, str]]] = {}
    if by_platform:
        rows = NodeMembership.objects.filter(node__backend_id=backend_id).values_list(
            "node_id", "pool__name", "platform__name"
        )
        for node_id, pool, platform in rows:
            platforms.setdefault(node_id, set()).add((pool, platform))
    now = dict(NodePoolMember.objects.filter(node__backend_id=backend_id).values_list("node_id", "node_pool__name"))
    result = SelectorPreview(backend=backend_name, total=len(nodes))
    for pk, node_name, labels, gpus in nodes:
        node = PreviewNode(node_name, gpus, now.get(pk, ""))
        winner = claim(labels or {}, platforms.get(pk, ()), labelled, by_platform, default)
        if winner == CANDIDATE:
            held_by_other = node.now_in and node.now_in != name and not _is_default(others, node.now_in)
            (result.held if held_by_other and candidate.selector_kind != SelectorKind.DEFAULT else result.taken).append(
                node
            )
        elif _matches(candidate, labels or {}, platforms.get(pk, ())):
            result.kept.append((node, names.get(winner, node.now_in)))
    return result


def _matches(pool: NodePool, labels: dict, platforms) -> bool:
    if pool.selector_kind == SelectorKind.LABEL:
        return pool.label_key in labels and labels[pool.label_key] == pool.label_value
    if pool.selector_kind == SelectorKind.PLATFORM:
        return (pool.pool_name, pool.platform_name) in platforms
    return False


def _is_default(pools: list[NodePool], name: str) -> bool:
    return any(p.name == name and p.selector_kind == SelectorKind.DEFAULT for p in pools)
