"""Preview: the exact Pod a task would get on a pool's platform, why each field is what it is, and the verdict.

Reads the platform's stored compiled configuration (no template merge at request time) and asks the
engine to resolve one task. Shared by `pool preview`, the admin preview page and the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from configs.errors import ConfigError
from pools import confinement as confining
from pools.confinement import confined, named_reasons
from pools.control_image import control_image
from pools.engine import TaskInput, WorkflowContext, resolve
from pools.errors import PoolNotFound
from pools.models import Platform, Pool
from pools.services.compilation import compiled_platform
from pools.services.machine_pool_shapes import would_be_by_platform
from pools.services.node_rules import capacities_for
from pools.services.placement_nodes import placement_candidates, placement_of
from pools.services.spot_capacity import stateful_on_spot
from portal.json_paths import join_index, join_key

RESOURCE_KEYS = ("cpu", "gpu", "memory", "storage")


@dataclass
class PreviewRequest:
    pool: str
    platform: str | None = None
    resources: dict = field(default_factory=dict)  # cpu, gpu, memory, storage (strings or numbers)
    variables: dict = field(default_factory=dict)  # extra NAME=VALUE, task layer
    task: str = "preview-task"
    image: str = "ubuntu:24.04"
    command: list[str] = field(default_factory=lambda: ["sleep", "infinity"])


def preview(request: PreviewRequest) -> dict:
    """`{"pool", "platform", "pod", "provenance", "warnings", "validation", "variables", "placement"}`: the
    placement (nodes that would take the pod now, why not the others) when a pod resolved. The pod is confined
    to the node pool the platform is charged to, as its tasks' pods are (`pools.confinement`; `confinement`:
    that node pool and selector). Raises domain errors."""
    platform = find_platform(request.pool, request.platform)
    nodes = capacities_for([platform])[platform.pk]
    task = TaskInput(
        name=request.task,
        image=request.image,
        command=list(request.command),
        resources={k: v for k, v in request.resources.items() if v not in (None, "")},
        variables=dict(request.variables),
    )
    resolution = resolve(
        compiled_platform(platform),
        task,
        WorkflowContext(
            submitted_by="preview",
            scheduler_name=platform.pool.backend.scheduler_name,
            **control_image(platform.pool.backend),
        ),
        nodes,
    )
    confinement = confining.of_platform(platform.pool, platform.name)  # what the pods really get (quotas says)
    if resolution.pod and confinement:
        confined(resolution.pod, confinement.node_selector)
    result = resolution.to_dict()
    if resolution.pod:
        candidates = placement_candidates({platform.pk}).get(platform.pk, [])
        result["placement"] = placement_of(resolution.pod, candidates)
        if confinement:
            _show_confinement(result, confinement, platform.pool.backend_id, candidates)
    if nodes is None:
        result["warnings"].append("node rules (K8_*) were not checked: the cluster's nodes have not been synced yet")
    scale_from_zero = [node.describe() for node in would_be_by_platform([platform])[platform.pk]]
    if scale_from_zero:
        result["scale_from_zero"] = scale_from_zero
        result["warnings"].extend(scale_from_zero)  # every door shows the warnings
    result["warnings"].extend(stateful_on_spot([platform]).values())
    return {"pool": platform.pool.name, "platform": platform.name, **result}


def _show_confinement(result: dict, confinement, backend_id: int, candidates: list) -> None:
    """The confinement's provenance ("added by the portal: node pool …"), and each node kept off by it named
    with the node pool its labels put it in."""
    result["provenance"] = {**result["provenance"], **confinement.provenance()}
    result["confinement"] = confinement.to_dict()
    node_pools = confining.node_pools(backend_id, {node.name: node.labels for node in candidates})
    named_reasons(result["placement"], confinement, node_pools)


def find_platform(pool_name: str, platform_name: str | None) -> Platform:
    try:
        pool = Pool.objects.get(name=pool_name)
    except Pool.DoesNotExist:
        raise PoolNotFound.named(pool_name) from None
    platforms = {p.name: p for p in pool.platforms.select_related("pool__backend")}
    name = platform_name or pool.default_platform
    if not name:
        if len(platforms) == 1:
            return next(iter(platforms.values()))
        raise ConfigError(
            "the pool has no default platform; choose one with --platform "
            f"({', '.join(sorted(platforms)) or 'the pool has no platforms'})",
            field="platform",
            value=None,
        )
    if name not in platforms:
        raise ConfigError(
            f"is not a platform of pool {pool_name} (platforms: {', '.join(sorted(platforms))})",
            field="platform",
            value=name,
        )
    return platforms[name]


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """`--set NAME=VALUE` pairs; values stay strings (the engine decides what they mean)."""
    result = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError("expected NAME=VALUE", field="--set", value=pair)
        result[name.strip()] = value
    return result


def annotated_yaml(pod: dict, provenance: dict[str, dict]) -> list[tuple[str, str]]:
    """The pod as block YAML lines, each leaf line paired with a short note of where its value came from."""
    lines: list[tuple[str, str]] = []
    _emit(pod, "", "", lines, provenance)
    return lines


def describe(origin: dict | None) -> str:
    if not origin:
        return ""
    if origin.get("setting"):  # a value the system took from a setting: the control image
        return f"{origin.get('source', '')}: {origin['setting']}"
    if origin.get("source") != "template":
        return origin.get("source", "")
    used = ", ".join(f"{v['name']} ({v['layer']})" for v in origin.get("variables", []))
    return f"template {origin['template']}" + (f" ← {used}" if used else "")


def _emit(value, path: str, column: str, lines: list, provenance: dict) -> None:
    """Append `value` at indentation `column`; a mapping inside a list starts on the item's `- ` line."""
    if isinstance(value, dict):
        for key, item in value.items():
            child = join_key(path, key)
            if isinstance(item, (dict, list)) and item:
                lines.append((f"{column}{_scalar(key)}:", ""))
                _emit(item, child, column + "  ", lines, provenance)
            else:
                lines.append((f"{column}{_scalar(key)}: {_scalar(item)}", describe(provenance.get(child))))
        return
    for index, item in enumerate(value):
        child = join_index(path, index)
        if isinstance(item, dict) and item:
            first = len(lines)
            _emit(item, child, column + "  ", lines, provenance)
            text, note = lines[first]
            lines[first] = (f"{column}- {text[len(column) + 2 :]}", note)
        elif isinstance(item, list) and item:
            lines.append((f"{column}-", ""))
            _emit(item, child, column + "  ", lines, provenance)
        else:
            lines.append((f"{column}- {_scalar(item)}", describe(provenance.get(child))))


def _scalar(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()
