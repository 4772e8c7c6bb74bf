"""OSMO v2 workflow specs: parse, validate and normalize what a user submits (osmo-reference §5.1).

    spec = parse_workflow(text_or_dict, source="train.yaml")       # SpecError names the path, value and reason
    spec = substitute_tokens(spec, workflow_id="train-7", uuid=u, namespace=ns)  # workflow_id, uuid, host:<task>
    for task in spec.tasks():
        platform = spec.platform_of(task, pool.default_platform, set(pool.platforms))
        resolve(compiled[platform], spec.task_input(task), ctx)     # the engine takes it from here
    exec_timeout, queue_timeout, warnings = effective_timeouts(spec, pool_defaults=..., pool_maxima=...)

Error paths are relative to the `workflow:` mapping (`tasks[2].resource`, `groups[1].tasks[0].image`,
`resources.gpu.memory`), except `version` and `workflow` themselves. Pure Python: no Django APIs, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import NoReturn

from pools.engine import TaskInput, k8s_name
from portal.json_paths import join_index, join_key
from portal.safe_yaml import Limits, SafeYAMLError, check_document, load
from workflows.spec_fields import (
    MAX_LABELS,
    WORKFLOW_NAME_MAX,
    SpecError,
    check_bool,
    check_cpu,
    check_credentials,
    check_environment,
    check_exit_actions,
    check_gpu,
    check_labels,
    check_node_names,
    check_size,
    check_task_name,
    check_unique,
    check_volume_mounts,
    check_workflow_name,
    format_duration,
    parse_spec_timeout,
    string_list,
)
from workflows.spec_tokens import SUPPORTED_TOKENS, substitute_tokens, token_warnings

__all__ = [
    "MAX_LABELS",
    "RESERVED_TASK_NAMES",
    "SUPPORTED_TOKENS",
    "UNSUPPORTED_TASK_FIELDS",
    "WORKFLOW_NAME_MAX",
    "GroupSpec",
    "ResourceSpec",
    "SpecError",
    "TaskSpec",
    "WorkflowSpec",
    "effective_timeouts",
    "parse_workflow",
    "spec_path",
    "substitute_tokens",
]

SUPPORTED_VERSION = 2
RESERVED_TASK_NAMES = ("osmo-ctrl",)

_TOP_FIELDS = ("version", "workflow", "default-values")
_WORKFLOW_FIELDS = ("name", "labels", "pool", "backend", "timeout", "resources", "tasks", "groups")
_TIMEOUT_FIELDS = ("exec_timeout", "queue_timeout")
_RESOURCE_FIELDS = ("cpu", "gpu", "memory", "storage", "platform", "nodesExcluded", "topology")
_GROUP_FIELDS = ("name", "barrier", "ignoreNonleadStatus", "tasks")
_TASK_FIELDS = (
    "name",
    "image",
    "command",
    "args",
    "environment",
    "resource",
    "privileged",
    "hostNetwork",
    "volumeMounts",
    "exitActions",
    "lead",
    "credentials",
)
UNSUPPORTED_TASK_FIELDS = (
    "inputs",
    "outputs",
    "files",
    "downloadType",
    "cacheSize",
    "checkpoint",
    "kpis",
)
_HINTS = {
    "resources": "a task names one entry of workflow.resources with resource: <name>",
    "env": "did you mean environment?",
    "volumes": "did you mean volumeMounts?",
    "host_network": "did you mean hostNetwork?",
    "exit_actions": "did you mean exitActions?",
}


def _fail(reason: str, field: str = "", value: object = None) -> NoReturn:
    raise SpecError(reason, field=field, value=value)


# ---------------------------------------------------------------------------------------------- the model


@dataclass
class ResourceSpec:
    name: str
    cpu: str | int | float | None = None  # as written (validated): 2, 0.5, "500m"
    gpu: int | None = None
    memory: str | None = None  # a Kubernetes quantity, as written
    storage: str | None = None
    platform: str | None = None
    nodes_excluded: list[str] = field(default_factory=list)

    def engine_resources(self) -> dict:
        """The engine's `TaskInput.resources`: only what is given (0 is a value; None means the default)."""
        values = {key: getattr(self, key) for key in ("cpu", "gpu", "memory", "storage")}
        resources = {key: value for key, value in values.items() if value is not None}
        if self.nodes_excluded:
            resources["nodesExcluded"] = list(self.nodes_excluded)
        return resources


@dataclass
class TaskSpec:
    name: str
    image: str
    command: list[str]
    args: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    resource: str = "default"
    privileged: bool = False
    host_network: bool = False
    volume_mounts: list[str] = field(default_factory=list)  # OSMO "src[:dst]", validated
    exit_actions: dict[str, str] = field(default_factory=dict)  # {"COMPLETE"|"FAIL"|"RESCHEDULE": "0,1-10"}
    credentials: dict[str, str | dict[str, str]] = field(default_factory=dict)  # {name: /dir | {ENV: key}}
    lead: bool = False
    group: str = ""
    path: str = field(default="", compare=False)  # where it was written: "tasks[0]", "groups[1].tasks[2]"


@dataclass
class GroupSpec:
    name: str
    tasks: list[TaskSpec]
    barrier: bool = True
    ignore_non_lead_status: bool = True


@dataclass
class WorkflowSpec:
    name: str
    labels: dict[str, str]
    exec_timeout: timedelta | None
    queue_timeout: timedelta | None
    resources: dict[str, ResourceSpec]
    groups: list[GroupSpec]
    warnings: list[str] = field(default_factory=list)
    document: dict = field(default_factory=dict, repr=False, compare=False)  # the document as submitted

    def tasks(self) -> list[TaskSpec]:
        return [task for group in self.groups for task in group.tasks]

    def task_input(self, task: TaskSpec) -> TaskInput:
        """What the engine resolves: the task plus its resource entry as {cpu, gpu, memory, storage, nodesExcluded}."""
        return TaskInput(
            name=task.name,
            image=task.image,
            command=list(task.command),
            args=list(task.args),
            environment=dict(task.environment),
            resources=self._resource_of(task).engine_resources(),
            privileged=task.privileged,
            host_network=task.host_network,
            volume_mounts=list(task.volume_mounts),
            variables={},
            lead=bool(task.lead),
        )

    def platform_of(self, task: TaskSpec, default_platform: str | None, platforms: set[str]) -> str:
        """The task's platform: its resource's `platform`, else the pool's default (OSMO §5.2 step 4)."""
        resource = self._resource_of(task)
        listed = ", ".join(sorted(platforms)) or "none"
        if resource.platform:
            if resource.platform not in platforms:
                _fail(
                    f"platform {resource.platform} does not exist in this pool (platforms: {listed})",
                    join_key(join_key("resources", resource.name), "platform"),
                    resource.platform,
                )
            return resource.platform
        if not default_platform:
            _fail(
                f"Task {task.name} does not have a platform: resource {resource.name!r} names none and the pool "
                f"has no default_platform",
                join_key(task.path, "resource"),
                task.resource,
            )
        if default_platform not in platforms:
            _fail(
                f"the pool's default_platform {default_platform} is not one of its platforms ({listed})",
                join_key(task.path, "resource"),
                default_platform,
            )
        return default_platform

    def _resource_of(self, task: TaskSpec) -> ResourceSpec:
        try:
            return self.resources[task.resource]
        except KeyError:
            _fail(f"Task {task.name} has no specified resource", join_key(task.path, "resource"), task.resource)


# ---------------------------------------------------------------------------------------------- parsing


def parse_workflow(
    text_or_dict: str | dict, *, source: str = "workflow.yaml", max_tasks: int = 100, limits: Limits | None = None
) -> WorkflowSpec:
    """Parse an OSMO v2 spec from YAML/JSON text or an already-parsed dict. Raises SpecError.

    Text is read by `portal.safe_yaml` within `limits` (default: `Limits()`, the settings' defaults); a dict
    is checked against `limits` when they are given (a JSON body: depth, values, numbers)."""
    try:
        if isinstance(text_or_dict, str):
            if not text_or_dict.strip():
                _fail(f"{source}: the spec is empty", "", "")
            document = load(text_or_dict, limits or Limits(what="spec"), source)
        else:
            document = text_or_dict
            if limits is not None:
                check_document(document, limits, source)
    except SafeYAMLError as error:  # the reason names source:line:col, the field the document path
        raise SpecError(error.reason, field=spec_path(error.field), value=error.value) from None
    return _Parser(max_tasks).document(document)


def spec_path(path: str) -> str:
    """Document paths as SpecError names them: relative to `workflow:` (`tasks[0].name`)."""
    if path.startswith("workflow."):
        return path[len("workflow.") :]
    return path[len("workflow") :] if path.startswith("workflow[") else path


class _Parser:
    def __init__(self, max_tasks: int) -> None:
        self.max_tasks = max_tasks
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    # ------------------------------------------------------------------------ document and workflow

    def document(self, document: object) -> WorkflowSpec:
        if not isinstance(document, Mapping):
            _fail("a workflow spec is a mapping with version: 2 and workflow: {...}", "", type(document).__name__)
        _check_keys(document, _TOP_FIELDS, "", hint=_top_hint(document))
        self.version(document)
        if "default-values" in document:
            self.warn("default-values ignored: only a spec sent as text is rendered; {{...}} stays literal text")
        workflow = document.get("workflow")
        if not isinstance(workflow, Mapping):
            _fail("is required: a mapping with name, resources and tasks or groups", "workflow", workflow)
        spec = self.workflow(workflow)
        spec.document = _json_safe(document)
        return spec

    def version(self, document: Mapping) -> None:
        if "version" not in document:
            self.warn("version missing: assuming version 2")
            return
        value = document["version"]
        ok = (
            (isinstance(value, int) and not isinstance(value, bool) and value == SUPPORTED_VERSION)
            or (isinstance(value, float) and value == SUPPORTED_VERSION)
            or (isinstance(value, str) and value.strip() == str(SUPPORTED_VERSION))
        )
        if not ok:
            _fail("Unsupported workflow version: only version 2 is supported", "version", value)

    def workflow(self, data: Mapping) -> WorkflowSpec:
        _check_keys(data, _WORKFLOW_FIELDS, "")
        for ignored in ("pool", "backend"):
            if data.get(ignored) not in (None, ""):
                self.warn(f"{ignored} ignored: the pool in the submission URL decides")
        name = check_workflow_name(data.get("name"))
        labels = check_labels(data.get("labels"))
        exec_timeout, queue_timeout = self.timeouts(data.get("timeout"))
        resources = self.resources(data.get("resources"))
        groups = self.groups_or_tasks(data)
        for task in (task for group in groups for task in group.tasks):
            if task.resource not in resources:
                defined = ", ".join(sorted(resources)) or "none"
                _fail(
                    f"Task {task.name} has no specified resource: {task.resource!r} is not defined in "
                    f"workflow.resources (defined: {defined})",
                    join_key(task.path, "resource"),
                    task.resource,
                )
        self.warn_tokens(groups)
        return WorkflowSpec(
            name=name,
            labels=labels,
            exec_timeout=exec_timeout,
            queue_timeout=queue_timeout,
            resources=resources,
            groups=groups,
            warnings=self.warnings,
        )

    def timeouts(self, data: object) -> tuple[timedelta | None, timedelta | None]:
        if data is None:
            return None, None
        if not isinstance(data, Mapping):
            _fail("must be a mapping with exec_timeout and/or queue_timeout", "timeout", data)
        _check_keys(data, _TIMEOUT_FIELDS, "timeout")
        return (
            parse_spec_timeout(data.get("exec_timeout"), "timeout.exec_timeout"),
            parse_spec_timeout(data.get("queue_timeout"), "timeout.queue_timeout"),
        )

    # ------------------------------------------------------------------------ resources

    def resources(self, data: object) -> dict[str, ResourceSpec]:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            _fail("must be a mapping of resource name to {cpu, gpu, memory, storage, platform}", "resources", data)
        return {self.resource_name(name): self.resource(name, body) for name, body in data.items()}

    @staticmethod
    def resource_name(name: object) -> str:
        if not isinstance(name, str) or not name.strip():
            _fail("a resource name is a non-empty string", "resources", name)
        return name

    def resource(self, name: str, body: object) -> ResourceSpec:
        path = join_key("resources", name)
        if body is None:
            return ResourceSpec(name)
        if not isinstance(body, Mapping):
            _fail("must be a mapping with cpu, gpu, memory, storage, platform, nodesExcluded", path, body)
        _check_keys(body, _RESOURCE_FIELDS, path)
        if body.get("topology") is not None:
            self.warn(f"{join_key(path, 'topology')} ignored: topology requirements are not supported yet")
        platform = body.get("platform")
        if platform is not None and (not isinstance(platform, str) or not platform.strip()):
            _fail("a platform is a non-empty string", join_key(path, "platform"), platform)
        return ResourceSpec(
            name=name,
            cpu=check_cpu(body.get("cpu"), join_key(path, "cpu")),
            gpu=check_gpu(body.get("gpu"), join_key(path, "gpu")),
            memory=check_size(body.get("memory"), join_key(path, "memory")),
            storage=check_size(body.get("storage"), join_key(path, "storage")),
            platform=platform,
            nodes_excluded=check_node_names(body.get("nodesExcluded"), join_key(path, "nodesExcluded")),
        )

    # ------------------------------------------------------------------------ groups and tasks

    def groups_or_tasks(self, data: Mapping) -> list[GroupSpec]:
        tasks, groups = data.get("tasks"), data.get("groups")
        if tasks is not None and groups is not None:
            _fail("Cannot use both groups and tasks: give one of them", "groups")
        if tasks is None and groups is None:
            _fail("a workflow needs at least one group or one task", "tasks")
        key = "tasks" if tasks is not None else "groups"
        items = data[key]
        if not isinstance(items, list) or not items:
            _fail("a workflow needs at least one group or one task: give a non-empty list", key, items)
        self.check_count(items, key)
        if key == "tasks":
            built = []
            for index, item in enumerate(items):
                task = self.task(item, join_index("tasks", index))
                task.lead, task.group = True, f"{task.name}-group"
                built.append(GroupSpec(name=task.group, tasks=[task]))
            check_unique([(task.name, task.path) for group in built for task in group.tasks])
            return built
        built = [self.group(item, join_index("groups", index)) for index, item in enumerate(items)]
        names = []
        for index, group in enumerate(built):
            names.append((group.name, join_index("groups", index)))
            names.extend((task.name, task.path) for task in group.tasks)
        check_unique(names)
        return built

    def check_count(self, items: list, key: str) -> None:
        if key == "tasks":
            count = len(items)
        else:
            count = sum(
                len(item["tasks"])
                for item in items
                if isinstance(item, Mapping) and isinstance(item.get("tasks"), list)
            )
        if count > self.max_tasks:
            _fail(f"the workflow has {count} tasks; at most {self.max_tasks} are allowed", key, count)

    def group(self, data: object, path: str) -> GroupSpec:
        if not isinstance(data, Mapping):
            _fail("a group is a mapping with name and tasks", path, data)
        _check_keys(data, _GROUP_FIELDS, path)
        name = check_task_name(data.get("name"), join_key(path, "name"), "group")
        tasks_path = join_key(path, "tasks")
        items = data.get("tasks")
        if not isinstance(items, list) or not items:
            _fail(f'Group "{name}" needs to have at least one task', tasks_path, items)
        tasks = [self.task(item, join_index(tasks_path, index)) for index, item in enumerate(items)]
        if len(tasks) == 1:
            tasks[0].lead = True
        leaders = sum(task.lead for task in tasks)
        if leaders != 1:
            _fail(
                f'Group "{name}" has {leaders} leader(s) but must have exactly one: mark one task lead: true',
                tasks_path,
                [task.name for task in tasks if task.lead],
            )
        for task in tasks:
            task.group = name
        return GroupSpec(
            name=name,
            tasks=tasks,
            barrier=check_bool(data.get("barrier", True), join_key(path, "barrier")),
            ignore_non_lead_status=check_bool(
                data.get("ignoreNonleadStatus", True), join_key(path, "ignoreNonleadStatus")
            ),
        )

    def task(self, data: object, path: str) -> TaskSpec:
        if not isinstance(data, Mapping):
            _fail("a task is a mapping with name, image and command", path, data)
        unsupported = [key for key in UNSUPPORTED_TASK_FIELDS if key in data]
        _check_keys(data, _TASK_FIELDS + UNSUPPORTED_TASK_FIELDS, path)
        for key in unsupported:
            self.warn(f"{join_key(path, key)} ignored: not supported yet")
        name = check_task_name(data.get("name"), join_key(path, "name"), "task")
        if k8s_name(name) in RESERVED_TASK_NAMES:
            _fail(
                f"Container {name} cannot be named {k8s_name(name)!r}: the platform's control container uses it",
                join_key(path, "name"),
                name,
            )
        image = data.get("image")
        if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
            _fail(
                "is required: an image reference such as nvcr.io/nvidia/pytorch:24.01-py3 (no spaces)",
                join_key(path, "image"),
                image,
            )
        command = string_list(data.get("command"), join_key(path, "command"), required=True)
        if not command:
            _fail(f"Container {name} should have at least one command", join_key(path, "command"), [])
        resource = data.get("resource", "default")
        if not isinstance(resource, str) or not resource.strip():
            _fail("names an entry of workflow.resources", join_key(path, "resource"), resource)
        return TaskSpec(
            name=name,
            image=image,
            command=command,
            args=string_list(data.get("args"), join_key(path, "args")),
            environment=check_environment(data.get("environment"), join_key(path, "environment")),
            resource=resource,
            privileged=check_bool(data.get("privileged", False), join_key(path, "privileged")),
            host_network=check_bool(data.get("hostNetwork", False), join_key(path, "hostNetwork")),
            volume_mounts=check_volume_mounts(data.get("volumeMounts"), join_key(path, "volumeMounts")),
            exit_actions=check_exit_actions(data.get("exitActions"), join_key(path, "exitActions")),
            credentials=check_credentials(data.get("credentials"), join_key(path, "credentials")),
            lead=check_bool(data.get("lead", False), join_key(path, "lead")),
            path=path,
        )

    def warn_tokens(self, groups: list[GroupSpec]) -> None:
        for warning in token_warnings(groups):
            self.warn(warning)


# ---------------------------------------------------------------------------------------------- fields


def _json_safe(value: object) -> object:
    """A copy that stores as JSON: YAML dates, timedeltas, NaN and non-string keys become strings."""
    if isinstance(value, Mapping):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    if value is None or isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return str(value)


def _top_hint(document: Mapping) -> str:
    stray = [key for key in document if key in _WORKFLOW_FIELDS]
    return "the workflow's fields go under workflow:" if stray else ""


def _check_keys(data: Mapping, allowed: tuple[str, ...], path: str, hint: str = "") -> None:
    for key in data:
        if key not in allowed:
            extra = hint or _HINTS.get(str(key), "")
            _fail(
                f"unknown field {key!r}; expected one of: {', '.join(allowed)}" + (f" ({extra})" if extra else ""),
                join_key(path, key),
                key,
            )


# ---------------------------------------------------------------------------------------------- submission


def effective_timeouts(
    spec: WorkflowSpec, *, pool_defaults: Mapping[str, timedelta | None], pool_maxima: Mapping[str, timedelta | None]
) -> tuple[timedelta | None, timedelta | None, list[str]]:
    """(exec_timeout, queue_timeout, warnings): the spec's value, else the pool default; capped at the pool max.

    `pool_defaults`/`pool_maxima` are keyed `exec_timeout` and `queue_timeout` (`exec`/`queue` also work); pass the
    global default where the pool has none. Unset with a maximum means the maximum (no limit exceeds any max).
    """
    results: list[timedelta | None] = []
    warnings: list[str] = []
    for kind in ("exec", "queue"):
        key = f"{kind}_timeout"
        value = getattr(spec, key)
        default = pool_defaults.get(key, pool_defaults.get(kind))
        maximum = pool_maxima.get(key, pool_maxima.get(kind))
        asked = value is not None
        value = value if asked else default
        if maximum is not None and (value is None or value > maximum):
            if value is not None:
                source = f"timeout.{key}" if asked else f"the pool's default {key}"
                warnings.append(
                    f"{source} {format_duration(value)} is longer than the pool's maximum "
                    f"{format_duration(maximum)}; using {format_duration(maximum)}"
                )
            value = maximum
        results.append(value)
    return results[0], results[1], warnings
