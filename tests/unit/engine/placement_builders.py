"""Builders shared by the placement tests."""

from __future__ import annotations

from pools.engine.placement import NodeInfo, Verdict, evaluate, prepare_pod

GiB = 2**30
ROOMY = {"cpu": 64_000, "memory": 512 * GiB, "ephemeral-storage": 10**12, "nvidia.com/gpu": 8, "pods": 110}


def make_node(
    name="node-a",
    *,
    labels=None,
    taints=(),
    unschedulable=False,
    allocatable=None,
    requested=None,
    pod_count=0,
) -> NodeInfo:
    return NodeInfo(
        name=name,
        labels=dict(labels or {}),
        taints=list(taints),
        unschedulable=unschedulable,
        allocatable=dict(ROOMY if allocatable is None else allocatable),
        requested=dict(requested or {}),
        pod_count=pod_count,
    )


def make_pod(*, containers=None, **spec) -> dict:
    spec["containers"] = containers if containers is not None else [{"name": "main", "image": "busybox"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def container(name="main", requests=None, limits=None, **extra) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def verdict(pod: dict, node: NodeInfo, **kwargs) -> Verdict:
    return evaluate(prepare_pod(pod), node, **kwargs)


def required_affinity(*terms) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key, operator, *values) -> dict:
    item = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return item


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
