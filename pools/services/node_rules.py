"""Node-rule inputs (`K8_CPU`, `K8_GPU`, `K8_MEMORY`, `K8_STORAGE`, `K8_GPU_PRODUCT`, `K8_GPU_CUDA_DRIVER`) for
platforms, from the node inventory.

As in OSMO, a node offers its allocatable resources minus what pods the portal does not own request
there: capacity for portal workloads, not what happens to be free this second. An autoscaled machine pool
with no node yet offers the node it would add (`pools.services.machine_pool_shapes`).
"""

from __future__ import annotations

import json

from django.db.models import TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from pools.engine import EngineError, NodeCapacity, parse_quantity
from pools.engine.rules import CUDA_DRIVER_LABELS, cuda_driver_version
from pools.models import NodeMembership
from pools.services.compilation import compiled_platform
from pools.services.machine_pool_shapes import would_be_by_platform

GPU = "nvidia.com/gpu"

_NODE_COLUMNS = (
    "platform_id",
    "node__name",
    "node__cpu_allocatable",
    "node__gpu_allocatable",
    "node__memory_allocatable",
    "node__storage_allocatable",
    "other_requests",
)
# as text: nodes of one machine pool repeat the same daemon set requests, decoded once per distinct text
_OTHER = {"other_requests": Cast("node__requested_other", TextField())}
# The CUDA driver labels, read out of the node's labels in the query (not the whole label map), with the GPU
# product: only for platforms whose node rules read them (a fleet's platform has 2,500 member nodes).
_CUDA_COLUMNS = {f"cuda_{i}": KeyTextTransform(label, "node__labels") for i, label in enumerate(CUDA_DRIVER_LABELS)}
_GPU_LABEL_COLUMNS = ("node__gpu_product", *_CUDA_COLUMNS)


def capacities_for(platforms) -> dict[int, list[NodeCapacity] | None]:
    """Per platform id: its member nodes' capacities; None when its backend has no inventory yet."""
    platforms = list(platforms)
    # A backend that has completed a sync has an inventory, even if this platform matches none of its nodes;
    # a platform with member nodes has one whatever the sync record says.
    result: dict[int, list[NodeCapacity] | None] = {
        p.pk: ([] if p.pool.backend.last_sync_at is not None else None) for p in platforms
    }
    labels = any(_reads_gpu_labels(p) for p in platforms)
    rows = NodeMembership.objects.filter(platform_id__in=sorted(result)).order_by("node__name").annotate(**_OTHER)
    if labels:
        rows = rows.annotate(**_CUDA_COLUMNS).values_list(*_NODE_COLUMNS, *_GPU_LABEL_COLUMNS)
    else:
        rows = rows.values_list(*_NODE_COLUMNS)
    offers: dict[tuple, dict] = {}  # a node's figures → what it offers: a fleet's platform has 2,500 nodes, few shapes
    for platform_id, name, *figures in rows:
        key = tuple(figures)
        offer = offers.get(key)
        if offer is None:
            offer = offers[key] = _offer(*figures, labels=labels)
        result[platform_id] = result[platform_id] or []
        result[platform_id].append(NodeCapacity(name, **offer))
    # Scale from zero: a machine pool with no node yet offers the node it would add (its instance type).
    for platform_id, would_be in would_be_by_platform(platforms).items():
        if would_be:
            result[platform_id] = (result[platform_id] or []) + [node.capacity() for node in would_be]
    return result


def _offer(cpu, gpu, memory, storage, other_text, *gpu_labels, labels: bool) -> dict:
    """A node's allocatable minus what pods the portal does not own request there, as quantities."""
    other = json.loads(other_text) if other_text else {}
    return {
        "cpu": parse_quantity(f"{max(0, cpu - other.get('cpu', 0))}m"),
        "gpu": parse_quantity(max(0, gpu - other.get(GPU, 0))),
        "memory": parse_quantity(max(0, memory - other.get("memory", 0))),
        "storage": parse_quantity(max(0, storage - other.get("ephemeral-storage", 0))),
        **(_gpu_text(list(gpu_labels)) if labels else {}),
    }


def _reads_gpu_labels(platform) -> bool:
    try:
        return compiled_platform(platform).rules.reads_gpu_labels
    except EngineError:  # a platform that does not compile is refused where it is resolved
        return False


def _gpu_text(values: list) -> dict[str, str]:
    product, *cuda = values
    return {
        "gpu_product": product or "",
        "cuda_driver": cuda_driver_version(dict(zip(CUDA_DRIVER_LABELS, cuda, strict=True))),
    }
