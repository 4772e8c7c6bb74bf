"""Platform + task -> Pod manifest, with provenance for every field, warnings and a full validation verdict.

Build order (OSMO §2.2 step 2, adapted):
1. base pod from the task and the system: deterministic DNS-1123 name, labels (workflow labels under the
   `pool-portal/*` system labels), `restartPolicy: Never`, the user container (name USER_CONTAINER_NAME,
   the task's image/command/args/env, privileged, allowed host mounts), hostNetwork;
2. ⊕ the platform's merged template rendered with the task's variables (its `{{USER_CONTAINER_NAME}}`
   container merges into the user container by name);
3. system fields re-applied on top (apiVersion, kind, metadata.name, system labels, and the backend's
   schedulerName when it names one: the cluster's scheduler decides, not a template);
4. gates, schema validation, static rules, node rules (when nodes are given).
Bad input (a task value that is not a quantity, an undefined variable, a failing template) raises
EngineError; a pod that the platform or Kubernetes would refuse is reported in `validation`.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pools.engine.defaults import OSMO_CTRL_IMAGE
from pools.engine.errors import EngineError
from pools.engine.gates import (
    GatePolicy,
    check_pod,
    check_task_name,
    container_mount_paths,
    host_paths,
    plan_mounts,
)
from pools.engine.merge import merge_traced
from pools.engine.platform import SYSTEM, TASK, CompiledPlatform, Origin
from pools.engine.rules import CompiledRules, NodeCapacity, NodeRulesVerdict
from pools.engine.schema import validate_pod
from pools.engine.variables import Variable, build_variables, k8s_name, variable_values
from portal.json_paths import leaf_origins

__all__ = ["SAMPLE_NODE", "Resolution", "TaskInput", "WorkflowContext", "check_platform", "resolve"]

LABEL_PREFIX = "pool-portal/"
CONTROL_CONTAINER = "osmo-ctrl"  # OSMO's control sidecar: its image comes from the backend, not a template
_UUID_NAMESPACE = uuid.UUID("6f1c2a52-8d5e-4bd0-9d63-6b0c6f3f7a10")
_LABEL_INVALID = re.compile(r"[^A-Za-z0-9_.-]+")
# OSMO's test of a user name as a label value (NVIDIA/OSMO src/utils/job/task.py, TaskGroup._labels)
_OSMO_USER_LABEL = re.compile(r"[a-zA-Z0-9][A-Za-z0-9-_.]{0,61}[a-zA-Z0-9]")
SAMPLE_NODE = NodeCapacity("sample-node", cpu="1024", gpu="64", memory="16Ti", storage="1Pi")


@dataclass
class TaskInput:
    name: str
    image: str = "ubuntu:24.04"
    command: list[str] = ()
    args: list[str] = ()
    environment: dict[str, str] = field(default_factory=dict)
    resources: dict = field(default_factory=dict)  # cpu, gpu, memory, storage, nodesExcluded
    privileged: bool = False
    host_network: bool = False
    volume_mounts: list[str] = ()  # OSMO syntax "src[:dst]"
    variables: dict = field(default_factory=dict)  # extra --set values (layer "task")
    uuid: str = ""  # WF_TASK_UUID; derived from the workflow and task name when empty
    lead: bool = False  # the group's lead task: WF_LEAD_CONTAINER is "true"


@dataclass
class WorkflowContext:
    workflow_id: str = "preview-1"
    workflow_uuid: str = ""
    submitted_by: str = "preview"
    priority: str = "NORMAL"
    group_name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    retry_id: int = 0
    scheduler_name: str = ""  # the backend's `scheduler_name`; empty leaves the cluster's default scheduler
    # The image of a template's `osmo-ctrl` container that has none (OSMO's service fills it in, so its own
    # default_ctrl template has no image), and where it comes from, for the provenance.
    control_image: str = OSMO_CTRL_IMAGE
    control_image_source: str = "the default control image"


@dataclass
class Resolution:
    """The resolved pod and its verdict. `provenance` is built on first read: only previews and dry runs
    read it, and it costs as much as the rest of a resolve. It describes the pod as resolved."""

    pod: dict
    warnings: list[str]
    variables: dict[str, dict]
    validation: dict
    origins: object = field(default=None, repr=False, compare=False)  # origin tree mirroring `pod`
    variable_layers: Mapping[str, Variable] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.validation["ok"]

    @functools.cached_property
    def provenance(self) -> dict[str, dict]:
        return _provenance(self.pod, self.origins, self.variable_layers)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "pod": self.pod,
            "provenance": self.provenance,
            "warnings": list(self.warnings),
            "variables": self.variables,
            "validation": self.validation,
        }


# ---------------------------------------------------------------------------------------------- inputs


def _strings(value: object, field_name: str) -> list[str]:
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple))
        or not all(isinstance(item, str) for item in value)
    ):
        raise EngineError("must be a list of strings", field=field_name, value=value)
    return list(value)


def _env_value(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise EngineError("environment values are strings", field=f"environment.{name}", value=value)


def _check_task(task: TaskInput) -> None:
    if not isinstance(task.name, str) or not task.name.strip():
        raise EngineError("a task needs a name", field="name", value=task.name)
    if not isinstance(task.image, str) or not task.image.strip():
        raise EngineError("a task needs an image", field="image", value=task.image)
    _strings(task.command, "command")
    _strings(task.args, "args")
    _strings(task.volume_mounts, "volumeMounts")
    for name, value in (
        ("environment", task.environment),
        ("resources", task.resources),
        ("variables", task.variables),
    ):
        if not isinstance(value, Mapping):
            raise EngineError("must be a mapping", field=name, value=value)
    for name, value in (("privileged", task.privileged), ("hostNetwork", task.host_network), ("lead", task.lead)):
        if not isinstance(value, bool):
            raise EngineError("must be true or false", field=name, value=value)


def label_value(text: str) -> str:
    """A valid label value (≤63, alphanumeric at both ends) from free text."""
    value = _LABEL_INVALID.sub("-", str(text)).strip("-_.")
    if len(value) > 63:
        value = k8s_name(text)
    return value


def osmo_submitted_by(user: str) -> str:
    """`WF_SUBMITTED_BY` as OSMO makes it (`TaskGroup._labels`, label `osmo.submitted_by`): the user when it is
    a valid label value, else an e-mail's local part when that is one, else no label, which renders as ""."""
    if _OSMO_USER_LABEL.fullmatch(user):
        return user
    local, at, _ = user.partition("@")
    return local if at and _OSMO_USER_LABEL.fullmatch(local) else ""


@functools.lru_cache(maxsize=1024)
def _derived_uuid(text: str) -> str:
    return uuid.uuid5(_UUID_NAMESPACE, text).hex


def task_uuid(workflow_uuid: str, task_name: str) -> str:
    """`WF_TASK_UUID` of a task: 32 hex digits derived from the workflow's uuid and the task's name."""
    return _derived_uuid(f"{workflow_uuid}/{task_name}")


def group_uuid(workflow_uuid: str, group_name: str) -> str:
    """`WF_GROUP_UUID` of a group: 32 hex digits derived from the workflow's uuid and the group's name."""
    return _derived_uuid(f"{workflow_uuid}/group/{group_name}")


def _system_variables(
    compiled: CompiledPlatform, task: TaskInput, ctx: WorkflowContext, container: str
) -> dict[str, object]:
    workflow_uuid = ctx.workflow_uuid or _derived_uuid(ctx.workflow_id)
    this_task_uuid = task.uuid or task_uuid(workflow_uuid, task.name)
    group_name = ctx.group_name or f"{task.name}-group"
    return {
        "USER_CONTAINER_NAME": container,
        "WF_ID": ctx.workflow_id,
        "WF_UUID": workflow_uuid,
        "WF_POOL": compiled.config.pool,
        "WF_PLATFORM": compiled.config.platform,
        "WF_TASK_NAME": task.name,
        "WF_TASK_UUID": this_task_uuid,
        "WF_GROUP_NAME": group_name,
        "WF_GROUP_UUID": group_uuid(workflow_uuid, group_name),
        # OSMO labels only the lead (osmo.lead_container: 'true'); an absent variable renders as "" there
        "WF_LEAD_CONTAINER": "true" if task.lead else "",
        # OSMO's values are its pod labels': the submitter as a valid label value, the priority in lowercase
        # (`_task_labels`: priority.value.lower()), so templates naming labels or priority classes work
        "WF_SUBMITTED_BY": osmo_submitted_by(ctx.submitted_by),
        "WF_PRIORITY": ctx.priority.lower(),
        "WF_RETRY_ID": ctx.retry_id,
    }


def _system_labels(compiled: CompiledPlatform, task: TaskInput, ctx: WorkflowContext) -> dict[str, str]:
    return {
        f"{LABEL_PREFIX}workflow": label_value(ctx.workflow_id),
        f"{LABEL_PREFIX}task": label_value(task.name),
        f"{LABEL_PREFIX}pool": label_value(compiled.config.pool),
        f"{LABEL_PREFIX}platform": label_value(compiled.config.platform),
    }


def pod_name(workflow_id: str, task_name: str, retry_id: int = 0) -> str:
    suffix = f"-r{retry_id}" if retry_id else ""
    return k8s_name(f"{workflow_id}-{task_name}{suffix}")


# ---------------------------------------------------------------------------------------------- pod


def _base_pod(
    task: TaskInput, ctx: WorkflowContext, container: str, mounts, labels: dict[str, str], name: str
) -> tuple[dict, dict]:
    user: dict = {"name": container, "image": task.image}
    if task.command:
        user["command"] = list(task.command)
    if task.args:
        user["args"] = list(task.args)
    if task.environment:
        user["env"] = [{"name": str(k), "value": _env_value(str(k), v)} for k, v in task.environment.items()]
    if mounts:
        user["volumeMounts"] = [{"name": m.volume, "mountPath": m.target} for m in mounts]
    if task.privileged:
        user["securityContext"] = {"privileged": True}
    spec: dict = {"restartPolicy": "Never", "containers": [user]}
    spec_origin: dict = {"restartPolicy": SYSTEM, "containers": [TASK]}
    if mounts:
        spec["volumes"] = [{"name": m.volume, "hostPath": {"path": m.source}} for m in mounts]
        spec_origin["volumes"] = TASK
    if task.host_network:
        spec["hostNetwork"] = True
        spec_origin["hostNetwork"] = TASK
    all_labels = {**{str(k): str(v) for k, v in ctx.labels.items()}, **labels}
    label_origins = {key: SYSTEM if key in labels else TASK for key in all_labels}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": all_labels}, "spec": spec}
    origins = {
        "apiVersion": SYSTEM,
        "kind": SYSTEM,
        "metadata": {"name": SYSTEM, "labels": label_origins},
        "spec": spec_origin,
    }
    return pod, origins


def _reapply_system(pod: dict, origins: dict, name: str, labels: dict[str, str]) -> None:
    """Templates cannot change what identifies the pod: apiVersion, kind, name and the system labels."""
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    origins["apiVersion"] = origins["kind"] = SYSTEM
    metadata = pod["metadata"] if isinstance(pod.get("metadata"), dict) else {}
    meta_origins = origins.get("metadata") if isinstance(origins.get("metadata"), dict) else {}
    pod["metadata"], origins["metadata"] = metadata, meta_origins
    metadata["name"], meta_origins["name"] = name, SYSTEM
    current = metadata.get("labels") if isinstance(metadata.get("labels"), dict) else {}
    current_origins = meta_origins.get("labels")
    if not isinstance(current_origins, dict):
        current_origins = dict.fromkeys(current, current_origins or SYSTEM)
    metadata["labels"] = {**current, **labels}
    meta_origins["labels"] = {**current_origins, **dict.fromkeys(labels, SYSTEM)}


def _set_scheduler(pod: dict, origins: dict, scheduler_name: str) -> None:
    """The backend's scheduler on every pod: a template cannot route a pod around the scheduler that
    enforces the cluster's quotas (KAI-Scheduler, for one)."""
    spec = pod["spec"] if isinstance(pod.get("spec"), dict) else {}
    spec_origins = origins.get("spec")
    if not isinstance(spec_origins, dict):
        spec_origins = dict.fromkeys(spec, spec_origins or SYSTEM)
    pod["spec"], origins["spec"] = spec, spec_origins
    spec["schedulerName"], spec_origins["schedulerName"] = scheduler_name, SYSTEM


def _protected_fields(template: object, skip: str) -> dict[str, dict]:
    """image/command/args of every template-defined container (by name), except the user container."""
    spec = template.get("spec") if isinstance(template, dict) else None
    fields: dict[str, dict] = {}
    for list_name in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(list_name) if isinstance(spec, dict) else None
        for container in items if isinstance(items, list) else ():
            if isinstance(container, dict) and container.get("name") != skip:
                fields[container.get("name")] = {k: container.get(k) for k in ("image", "command", "args")}
    return fields


# ---------------------------------------------------------------------------------------------- resolve


def resolve(
    compiled: CompiledPlatform,
    task: TaskInput,
    ctx: WorkflowContext | None = None,
    nodes: Sequence[NodeCapacity] | None = None,
) -> Resolution:
    """Resolve one task on one platform. Raises EngineError for bad input; reports pod problems in validation."""
    ctx = ctx or WorkflowContext()
    container, variables, values = _inputs(compiled, task, ctx)
    built = _build_pod(compiled, task, ctx, container, values)
    validation = _validate(compiled, task, container, built, values, nodes)
    warnings = list(compiled.warnings) + _override_warnings(built.overrides)
    if nodes is None and compiled.rules.node:
        warnings.append(f"{len(compiled.rules.node)} node rule(s) not checked: no node inventory was given")
    return Resolution(
        built.pod,
        warnings,
        {n: v.as_dict() for n, v in variables.items()},
        validation,
        origins=built.origins,
        variable_layers=variables,
    )


def _inputs(
    compiled: CompiledPlatform, task: TaskInput, ctx: WorkflowContext
) -> tuple[str, dict[str, Variable], Mapping[str, object]]:
    """The task's container name, its variables (with their layers) and their plain values."""
    _check_task(task)
    container = k8s_name(task.name)
    variables = build_variables(
        defaults=compiled.default_variables,
        resources=task.resources,
        task_variables=task.variables,
        system=_system_variables(compiled, task, ctx, container),
    )
    return container, variables, variable_values(variables)


@dataclass
class _Built:
    pod: dict
    origins: object
    rendered: object  # the platform template rendered for this task
    overrides: list
    mount_errors: list
    template_host_paths: set[str]
    control_index: int | None = None  # the osmo-ctrl container whose image the context filled in


def _policy(cfg) -> GatePolicy:
    return GatePolicy(cfg.platform, cfg.privileged_allowed, cfg.host_network_allowed, tuple(cfg.allowed_mounts))


def _build_pod(
    compiled: CompiledPlatform, task: TaskInput, ctx: WorkflowContext, container: str, values: Mapping[str, object]
) -> _Built:
    """Base pod ⊕ rendered template, then the system fields on top."""
    rendered = compiled.template.render(values)
    template_host_paths = host_paths(rendered)
    platform_mounts = template_host_paths | set(container_mount_paths(rendered))
    mounts, mount_errors = plan_mounts(task.volume_mounts, _policy(compiled.config), platform_mounts)
    name = pod_name(ctx.workflow_id, task.name, ctx.retry_id)
    labels = _system_labels(compiled, task, ctx)
    base, base_origins = _base_pod(task, ctx, container, mounts, labels, name)
    overrides: list = []
    pod, origins = merge_traced(base, base_origins, rendered, compiled.template_origins, overrides, directives=False)
    _reapply_system(pod, origins, name, labels)
    if ctx.scheduler_name:
        _set_scheduler(pod, origins, ctx.scheduler_name)
    control = _fill_control_image(pod, origins, rendered, ctx)
    return _Built(pod, origins, rendered, overrides, mount_errors, template_host_paths, control)


def _fill_control_image(pod: dict, origins: dict, rendered: object, ctx: WorkflowContext) -> int | None:
    """OSMO's service gives its `osmo-ctrl` container the backend's image (the template has only resources):
    a template's osmo-ctrl without an image gets `ctx.control_image`, said to come from its setting. The
    rendered template gets it too, so the gate that keeps template containers as their template wrote them
    protects it. Returns the pod container's index, or None. Only osmo-ctrl: any other container needs its
    image, the task's above all."""
    if not ctx.control_image:
        return None
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    index = next(
        (
            i
            for i, container in enumerate(containers if isinstance(containers, list) else ())
            if isinstance(container, dict) and container.get("name") == CONTROL_CONTAINER and not container.get("image")
        ),
        None,
    )
    for template_container in _template_containers(rendered):  # the merge may share it with the pod
        if template_container.get("name") == CONTROL_CONTAINER and not template_container.get("image"):
            template_container["image"] = ctx.control_image
    if index is not None:
        containers[index]["image"] = ctx.control_image
        _set_container_origin(pod, origins, index, "image", Origin("system", setting=ctx.control_image_source))
    return index


def _set_container_origin(pod: dict, origins: dict, index: int, key: str, origin: Origin) -> None:
    """Label spec.containers[index][key] with `origin`. Origin subtrees may be the compiled template's own
    (shared by every resolution): the container's mapping is replaced by a copy, never changed in place."""
    containers = pod["spec"]["containers"]
    spec_origins = origins.get("spec")
    if not isinstance(spec_origins, dict):
        spec_origins = origins["spec"] = dict.fromkeys(pod["spec"], spec_origins)
    items = spec_origins.get("containers")
    items = spec_origins["containers"] = list(items) if isinstance(items, list) else [items] * len(containers)
    item = items[index]
    items[index] = {**(item if isinstance(item, dict) else dict.fromkeys(containers[index], item)), key: origin}


def _template_containers(rendered: object) -> list[dict]:
    spec = rendered.get("spec") if isinstance(rendered, dict) else None
    items = spec.get("containers") if isinstance(spec, dict) else None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _validate(
    compiled: CompiledPlatform,
    task: TaskInput,
    container: str,
    built: _Built,
    values: Mapping[str, object],
    nodes: Sequence[NodeCapacity] | None,
) -> dict:
    cfg = compiled.config
    user_fields = {"image": task.image, "command": list(task.command), "args": list(task.args)}
    gate_errors = check_task_name(container, compiled.template_containers) + built.mount_errors
    gate_errors += check_pod(
        built.pod,
        _policy(cfg),
        user_container=container,
        user_fields=user_fields,
        template_fields=_protected_fields(built.rendered, container),
        template_host_paths=built.template_host_paths,
    )
    schema = _schema_violations(compiled, built, values)
    static = compiled.rules.check_static(values)
    verdict = None if nodes is None else compiled.rules.check_nodes(values, nodes, pool=cfg.pool, platform=cfg.platform)
    return {
        "ok": not (gate_errors or schema or static) and (verdict is None or verdict.passed),
        "static": [failure.as_dict() for failure in static],
        "nodes": None if verdict is None else verdict.as_dict(),
        "gates": [error.as_dict() for error in gate_errors],
        "schema": [violation.as_dict() for violation in schema],
    }


def _schema_violations(compiled: CompiledPlatform, built: _Built, values: Mapping[str, object]) -> list:
    """The pod's schema check. Containers the merge took unchanged from the rendered template (every one but
    the task's, which is merged) are keyed by what rendered them, not by their serialized value: the schema
    re-checks only what this task's values made different."""
    spec = built.pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    keys = None
    if isinstance(containers, list) and len(containers) >= _RENDER_KEYS_FROM:
        keys = compiled.template.container_keys(built.rendered, containers, values)
        if keys is not None and built.control_index is not None:
            keys[built.control_index] = None  # its image is the context's, which the key does not read
    return validate_pod(built.pod, container_keys=keys)


# Render keys cost about as much as serializing three or four small containers (bench_engine's schema rows):
# below this many containers the schema serializes them all.
_RENDER_KEYS_FROM = 6


def _override_warnings(overrides: list) -> list[str]:
    warnings = []
    for override in overrides:
        base, overlay = override.base_origin, override.overlay_origin
        if isinstance(base, Origin) and base.source != "template" and isinstance(overlay, Origin):
            warnings.append(f"template {overlay.template!r} overrides {override.path}, which the {base.source} sets")
    return warnings


def _provenance(pod: dict, origins: object, variables: Mapping[str, Variable]) -> dict[str, dict]:
    described: dict[int, dict] = {}  # by identity: origins are shared objects, and hashing them is slower
    provenance = leaf_origins(pod, origins)
    for path, origin in provenance.items():
        entry = described.get(id(origin))
        if entry is None:
            entry = described[id(origin)] = _describe(origin if isinstance(origin, Origin) else SYSTEM, variables)
        provenance[path] = entry
    return provenance


def _describe(origin: Origin, variables: Mapping[str, Variable]) -> dict:
    if origin.setting:
        return {"source": origin.source, "setting": origin.setting}
    if origin.source != "template":
        return {"source": origin.source}
    used = [
        {"name": name, "layer": variables[name].layer if name in variables else "undefined"}
        for name in origin.variables
    ]
    return {"source": "template", "template": origin.template, "variables": used}


# ---------------------------------------------------------------------------------------------- config check


def check_platform(compiled: CompiledPlatform, nodes: Sequence[NodeCapacity] | None = None) -> list[EngineError]:
    """Config-save check: defaults + a sample task must give a valid Pod, every rule must evaluate, gates
    must hold. With `nodes` (the live inventory), also report rules that reject every node."""
    sample = TaskInput(name="sample-task", command=["true"])
    ctx = WorkflowContext(workflow_id="config-check-1")
    container = k8s_name(sample.name)
    try:
        variables = build_variables(
            pool_variables=compiled.config.pool_variables,
            platform_variables=compiled.config.platform_variables,
            system=_system_variables(compiled, sample, ctx, container),
        )
    except EngineError as error:
        return [error]
    values = variable_values(variables)
    errors: list[EngineError] = [e.at("pod_template") for e in compiled.template.check(values)]
    if not errors:
        errors += _sample_pod_errors(compiled, sample, ctx)
    errors += [f.as_error() for f in compiled.rules.check_static(values) if f.kind == "error"]
    errors += _node_rule_errors(compiled.rules, values, [SAMPLE_NODE], only_evaluation=True)
    if nodes:
        errors += _node_rule_errors(
            compiled.rules, values, nodes, only_evaluation=False, platform=compiled.config.platform
        )
    return errors


def _sample_pod_errors(compiled: CompiledPlatform, sample: TaskInput, ctx: WorkflowContext) -> list[EngineError]:
    try:
        resolution = resolve(compiled, sample, ctx)
    except EngineError as error:
        return [error]
    validation = resolution.validation
    errors = [EngineError(g["reason"], field=g["field"], value=g["value"]) for g in validation["gates"]]
    errors += [
        EngineError(f"the resolved pod is not a valid Pod: {v['reason']}", field=v["path"])
        for v in validation["schema"]
    ]
    return errors


def _node_rule_errors(
    rules: CompiledRules,
    values: Mapping[str, object],
    nodes: Sequence[NodeCapacity],
    *,
    only_evaluation: bool,
    platform: str = "",
) -> list[EngineError]:
    errors, seen = [], set()
    for rule in rules.node:
        verdict: NodeRulesVerdict = CompiledRules(node=(rule,)).check_nodes(values, nodes)
        failures = list(verdict.failures.values())
        evaluation = [f for f in failures if f.kind == "error"]
        if evaluation and rule.where not in seen:
            seen.add(rule.where)
            errors.append(evaluation[0].as_error())
        elif not only_evaluation and not verdict.passed:
            errors.append(
                EngineError(
                    f"with the default values this rule rejects every node of platform "
                    f"{platform}: {failures[0].message}",
                    field=rule.where,
                )
            )
    return errors
