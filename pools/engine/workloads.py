"""The pod a workload manifest would create: a Pod itself, or the pod template of a Job, CronJob,
Deployment, StatefulSet, DaemonSet, ReplicaSet or PodTemplate.

Placement reads pods; people hand it whatever `kubectl get -o yaml` or a seed document gave them. Reading
`spec` of a Deployment as if it were a PodSpec would silently place the wrong object (no containers, no
selectors), so every other kind is refused, naming it.
"""

from __future__ import annotations

from pools.engine.errors import EngineError

# kind -> path from the manifest to its pod template ({metadata, spec})
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "PodTemplate": ("template",),
}
READABLE_KINDS = ("Pod", *TEMPLATE_PATHS)


def pod_of(manifest: object) -> dict:
    """The Pod manifest `manifest` describes. A document without `kind` is read as a Pod (or a bare PodSpec).

    Raises EngineError naming the kind that has no pod template, or the missing path of one that should.
    """
    if not isinstance(manifest, dict):
        raise EngineError(
            "the pod file must hold one object (a Pod or a workload)", field="", value=type(manifest).__name__
        )
    kind = manifest.get("kind")
    if kind is None or kind == "Pod":
        return manifest
    if not isinstance(kind, str) or kind not in TEMPLATE_PATHS:
        raise EngineError(
            f"a {kind} has no pod template to place; expected one of {', '.join(READABLE_KINDS)}",
            field="kind",
            value=kind,
        )
    template = _walk(manifest, TEMPLATE_PATHS[kind], kind)
    metadata = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    name = metadata.get("name") or _workload_name(manifest)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "name": name}, "spec": template.get("spec")}


def _walk(manifest: dict, path: tuple[str, ...], kind: str) -> dict:
    node: object = manifest
    for depth, key in enumerate(path):
        node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            where = ".".join(path[: depth + 1])
            raise EngineError(
                f"a {kind} needs its pod template at {'.'.join(path)}",
                field=where,
                value=None if node is None else type(node).__name__,
            )
    if not isinstance(node.get("spec"), dict):
        raise EngineError(
            f"the {kind}'s pod template has no spec",
            field=".".join((*path, "spec")),
            value=None if node.get("spec") is None else type(node.get("spec")).__name__,
        )
    return node


def _workload_name(manifest: dict) -> str:
    metadata = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    return str(metadata.get("name") or "")
