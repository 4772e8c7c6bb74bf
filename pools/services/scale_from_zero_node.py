"""The node a scale-from-zero machine pool would add, built from its spec and instance type: pure (no
Django, no I/O), so the `placement` command and the benchmarks use it as the services do
(`pools.services.machine_pool_shapes` finds which machine pools have no node yet)."""

from __future__ import annotations

from dataclasses import dataclass

from clusters.machinepools.spec import MACHINEPOOL_LABEL, TAINT_EFFECTS, InstanceType, MachinePoolSpec, Taint
from pools.engine import EngineError, NodeCapacity
from pools.engine.placement import NodeInfo
from pools.engine.placement_fit import parse_allocatable


@dataclass(frozen=True)
class WouldBeNode:
    """The node a scale-from-zero machine pool would add (`instance` None: a type the catalog lacks)."""

    spec: MachinePoolSpec
    instance: InstanceType | None
    backend_id: int = 0

    @property
    def name(self) -> str:
        return f"{self.spec.name} (would-be {self.spec.instance_type})"

    def describe(self) -> str:
        shape = self.instance.describe() if self.instance else self.spec.instance_type
        return f"no node now; machine pool {self.spec.name} can add a {shape}; up to {self.spec.most_nodes}"

    def node_info(self) -> NodeInfo:
        allocatable = self.instance.capacity() if self.instance else {}
        allocatable = {**allocatable, "ephemeral-storage": f"{self.spec.disk_size_gib}Gi"}
        return NodeInfo(
            name=self.name,
            labels=self.spec.node_labels(self.instance),
            taints=self.spec.node_taints(),
            allocatable=parse_allocatable(allocatable, "status.allocatable"),
            would_be=self.describe(),
        )

    def capacity(self) -> NodeCapacity:
        instance = self.instance
        return NodeCapacity(
            self.name,
            cpu=str(instance.vcpu if instance else 0),
            gpu=str(instance.gpu_count if instance else 0),
            memory=f"{instance.memory_mib if instance else 0}Mi",
            storage=f"{self.spec.disk_size_gib}Gi",
            gpu_product=instance.gpu_product if instance else "",  # the label the node will carry
        )


def would_be_from_document(document: object, nodes: list[NodeInfo], types: dict[str, InstanceType]) -> list[NodeInfo]:
    """The would-be nodes of machine pools described in a file, for those with no node among `nodes`: what
    `placement --machine-pools` adds. The file maps names to MACHINE_POOL documents (what `config show
    MACHINE_POOL --format yaml` prints: `autoscaling: {min_replicas, max_replicas}` or `replicas`, `disk_size`)
    or to the model's field names (`autoscaling: true`, `min_replicas`, `max_replicas`, `disk_size_gib`).
    Raises EngineError naming the bad field."""
    if not isinstance(document, dict):
        raise EngineError("expected a map of machine pool names to their fields", field="(document)")
    if isinstance(document.get("instance_type"), str):  # one pool's document: `config show MACHINE_POOL NAME`
        raise EngineError(
            "is one machine pool's document, which has no name: give `config show MACHINE_POOL --format yaml` "
            "(every machine pool, by name) or write it as {NAME: document}",
            field="(document)",
            value=document["instance_type"],
        )
    with_nodes = {node.labels.get(MACHINEPOOL_LABEL) for node in nodes}
    found = []
    for name, fields in document.items():
        spec = _spec(str(name), fields)
        if spec.autoscaling and spec.max_replicas > 0 and spec.name not in with_nodes:
            if spec.instance_type not in types:
                known = ", ".join(sorted(types))
                raise EngineError(f"unknown instance type (known: {known})", field=f"{name}.instance_type")
            found.append(WouldBeNode(spec, types[spec.instance_type]).node_info())
    return found


def _spec(name: str, fields: object) -> MachinePoolSpec:
    if not isinstance(fields, dict) or not isinstance(fields.get("instance_type"), str):
        raise EngineError("needs an instance_type", field=f"{name}.instance_type", value=fields)
    fields = _model_fields(name, fields)
    taints = fields.get("taints") or []
    if not isinstance(taints, list) or not all(
        isinstance(t, dict) and isinstance(t.get("key"), str) and t.get("effect") in TAINT_EFFECTS for t in taints
    ):
        raise EngineError(
            f"each taint needs a key and an effect ({', '.join(TAINT_EFFECTS)})", field=f"{name}.taints", value=taints
        )
    labels = fields.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise EngineError("labels map names to string values", field=f"{name}.labels", value=labels)
    try:
        numbers = {key: int(fields.get(key, default)) for key, default in _COUNTS.items()}
    except (TypeError, ValueError):
        raise EngineError("replica counts and disk size are whole numbers", field=name, value=fields) from None
    return MachinePoolSpec(
        name=name,
        instance_type=fields["instance_type"],
        autoscaling=bool(fields.get("autoscaling", True)),
        labels={str(k): v for k, v in labels.items()},
        taints=tuple(Taint(t["key"], str(t.get("value", "")), t["effect"]) for t in taints),
        spot=bool(fields.get("spot", False)),
        **numbers,
    )


_COUNTS = {"replicas": 0, "min_replicas": 0, "max_replicas": 0, "disk_size_gib": 300}


def _model_fields(name: str, fields: dict) -> dict:
    """A MACHINE_POOL document's fields as the model names them: `autoscaling: {min_replicas, max_replicas}`
    (null with a fixed `replicas`), `disk_size`; the model's own names pass as they are."""
    fields = dict(fields)
    scaling = fields.get("autoscaling", True)
    if isinstance(scaling, dict):
        fields.update(autoscaling=True, min_replicas=scaling.get("min_replicas", 0))
        fields["max_replicas"] = scaling.get("max_replicas")
    elif scaling is None:
        fields["autoscaling"] = False
    elif not isinstance(scaling, bool):
        raise EngineError(
            "is {min_replicas, max_replicas}, true/false or null", field=f"{name}.autoscaling", value=scaling
        )
    if fields.get("replicas") is None:
        fields["replicas"] = 0
    if "disk_size" in fields:
        fields["disk_size_gib"] = fields.pop("disk_size")
    return fields
