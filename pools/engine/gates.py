"""Platform gates, checked on the FINAL pod so neither a template nor a task can sneak past them.

- `privileged: true` in any container's securityContext only where the platform allows it;
- `hostNetwork: true` likewise;
- hostPath volumes only from the platform's `allowed_mounts` plus the hostPaths its own templates define;
- task `volumeMounts` use OSMO's `src[:dst]` syntax (`a:b:c` and `a:` are rejected); asking for a mount the
  platform template already provides is an error ("already provided by platform"), unless it is also in
  `allowed_mounts` (OSMO's rule);
- the image, command and args the portal sets stay as set: the user container's are exactly the task's,
  containers defined by templates (e.g. `osmo-ctrl`) keep the template's, and a task may not be named like
  a template container;
- no container sets an environment variable that makes the NVIDIA container runtime hand it GPUs the
  scheduler did not give it (`DEVICE_ENV`: `NVIDIA_VISIBLE_DEVICES=all` on a 0-GPU pod would see every GPU of
  its node, outside any quota), whoever wrote it.

The reserved names are listed here, once: `reserved_label` (label keys only the portal sets: the schedulers'
and autoscalers' namespaces and its own) and `reserved_env` (what users may not set; templates may set the
driver ones, never the device ones). The spec checks (workflows.spec_fields), the pod template's save
(pools.config_types) and this final gate all ask these two.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pools.engine.errors import EngineError
from portal.json_paths import join_index

__all__ = [
    "CONTAINER_LISTS",
    "GateError",
    "GatePolicy",
    "HostMount",
    "check_pod",
    "check_template",
    "check_task_name",
    "container_mount_paths",
    "env_names",
    "host_paths",
    "normalize_mounts",
    "parse_volume_mount",
    "plan_mounts",
    "reserved_env",
    "reserved_label",
]

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROTECTED_FIELDS = ("image", "command", "args")

# Label domains only the portal sets on a pod (a key in the domain or any subdomain): a user's label there could
# put the pod in another team's scheduler queue or node pool (KAI, Kueue, Run:ai) or an autoscaler's node pool
# (Karpenter), around the quota; `pool-portal/…` labels are the portal's own bookkeeping.
RESERVED_LABEL_DOMAINS = (
    "pool-portal",
    "kai.scheduler",
    "kueue.x-k8s.io",
    "runai",
    "run.ai",
    "karpenter.sh",
    "karpenter.k8s.aws",
)
# The NVIDIA container runtime's device selectors: where the node's toolkit honours them for unprivileged
# containers, they expose GPUs (or MIG, IMEX, NVSwitch, GDS devices) the device plugin never allocated.
DEVICE_ENV = (
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_IMEX_CHANNELS",
    "NVIDIA_NVSWITCH",
    "NVIDIA_GDS",
    "NVIDIA_GDRCOPY",
    "NVIDIA_MOFED",
)
# Its driver selectors: which driver libraries and checks a container gets. A platform's template may choose
# them (a simulation platform needs `graphics`); a user may not (NVIDIA_DISABLE_REQUIRE skips the driver check).
DRIVER_ENV = ("NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_DISABLE_REQUIRE")
DRIVER_ENV_PREFIX = "NVIDIA_REQUIRE_"
# CUDA_VISIBLE_DEVICES is not here: CUDA reads it inside the container to narrow the devices it already has.


def reserved_label(key: str) -> str:
    """Why a user may not set label `key` ('' when they may)."""
    prefix = key.rpartition("/")[0].lower()
    for domain in RESERVED_LABEL_DOMAINS:
        if prefix == domain or prefix.endswith("." + domain):
            return (
                f"label keys under {domain}/ are set only by the portal (they choose a pod's scheduler queue, "
                "node pool or node; a user's could reach around the team's quota)"
            )
    return ""


def reserved_env(name: str, *, template: bool = False) -> str:
    """Why a user (or, with `template`, a pod template) may not set environment variable `name` ('' if allowed)."""
    upper = name.upper()
    if upper in DEVICE_ENV:
        return (
            f"{name} selects GPUs (and other NVIDIA devices) for the container runtime, around the scheduler: "
            "the devices a pod gets are the ones it requests (resources.gpu); CUDA_VISIBLE_DEVICES narrows them"
        )
    if not template and (upper in DRIVER_ENV or upper.startswith(DRIVER_ENV_PREFIX)):
        return f"{name} is set by the platform's pod template (the NVIDIA driver capabilities and checks), not by users"
    return ""


def env_names(container: Mapping) -> list[tuple[int, str]]:
    """(index, name) of every `env` entry of a container that has a string name."""
    entries = container.get("env")
    return [
        (index, entry["name"])
        for index, entry in enumerate(entries if isinstance(entries, list) else ())
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
    ]


class GateError(EngineError):
    """Something the platform does not allow."""


@dataclass(frozen=True)
class GatePolicy:
    platform: str
    privileged_allowed: bool = False
    host_network_allowed: bool = False
    allowed_mounts: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostMount:
    source: str  # path on the node
    target: str  # path in the container
    volume: str  # pod volume name


def _containers(spec: object) -> Iterator[tuple[str, dict]]:
    """(path, container) for every container dict of a pod spec."""
    if not isinstance(spec, Mapping):
        return
    for list_name in CONTAINER_LISTS:
        items = spec.get(list_name)
        if isinstance(items, list):
            for index, container in enumerate(items):
                if isinstance(container, dict):
                    yield f"spec.{list_name}[{index}]", container


def _spec(pod: object) -> Mapping:
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def host_paths(pod_or_template: object) -> set[str]:
    """Every hostPath path among the volumes of a pod (or template)."""
    volumes = _spec(pod_or_template).get("volumes")
    paths = set()
    for volume in volumes if isinstance(volumes, list) else ():
        host = volume.get("hostPath") if isinstance(volume, Mapping) else None
        if isinstance(host, Mapping) and isinstance(host.get("path"), str):
            paths.add(_normal(host["path"]))
    return paths


def container_mount_paths(template: object, skip: Sequence[str] = ("osmo-ctrl",)) -> list[str]:
    """OSMO's default mounts: every mountPath of the template's containers except `skip` ones, in order."""
    found: list[str] = []
    for _, container in _containers(_spec(template)):
        if container.get("name") in skip:
            continue
        for mount in container.get("volumeMounts") or ():
            path = mount.get("mountPath") if isinstance(mount, Mapping) else None
            if isinstance(path, str) and _normal(path) not in found:
                found.append(_normal(path))
    return found


def _normal(path: str) -> str:
    """Paths compare as written (OSMO compares exact strings); only a trailing "/" is ignored."""
    return path.rstrip("/") or "/"


def _check_path(path: str, field: str, spec: str) -> None:
    if not path.startswith("/") or ".." in path.split("/"):
        raise GateError("mount paths must be absolute and must not contain '..'", field=field, value=spec)


def parse_volume_mount(spec: object, field: str = "volumeMounts") -> tuple[str, str]:
    """`src` or `src:dst` -> (src, dst); `a:b:c`, `a:` and `:b` are errors."""
    if not isinstance(spec, str):
        raise GateError("a volume mount is a string 'src' or 'src:dst'", field=field, value=spec)
    parts = spec.split(":")
    if len(parts) > 2 or any(not part for part in parts):
        raise GateError("a volume mount is 'src' or 'src:dst' with both parts non-empty", field=field, value=spec)
    source, target = parts[0], parts[-1]
    _check_path(source, field, spec)
    _check_path(target, field, spec)
    return _normal(source), _normal(target)


def plan_mounts(
    specs: Sequence[str], policy: GatePolicy, platform_mounts: set[str]
) -> tuple[list[HostMount], list[GateError]]:
    """Turn task volumeMounts into hostPath mounts; a refused mount is reported and left out of the pod."""
    allowed = {_normal(path) for path in policy.allowed_mounts}
    mounts, errors = [], []
    for index, spec in enumerate(specs):
        field = join_index("volumeMounts", index)
        try:
            source, target = parse_volume_mount(spec, field)
        except GateError as error:
            errors.append(error)
            continue
        if source in allowed:
            mounts.append(HostMount(source, target, f"host-mount-{index}"))
        elif source in platform_mounts:
            errors.append(
                GateError(f"{source} is already provided by platform {policy.platform}", field=field, value=spec)
            )
        else:
            listed = ", ".join(sorted(allowed)) or "none"
            errors.append(
                GateError(
                    f"{source} is not an allowed mount on platform {policy.platform} (allowed: {listed})",
                    field=field,
                    value=spec,
                )
            )
    return mounts, errors


def check_task_name(container_name: str, template_containers: Sequence[str]) -> list[GateError]:
    if container_name in template_containers:
        return [
            GateError(
                f"a task may not be named {container_name!r}: the platform template defines a container with that name",
                field="name",
                value=container_name,
            )
        ]
    return []


def check_pod(
    pod: dict,
    policy: GatePolicy,
    *,
    user_container: str,
    user_fields: Mapping[str, object],
    template_fields: Mapping[str, Mapping[str, object]],
    template_host_paths: set[str],
) -> list[GateError]:
    """Every gate violation of the final pod. `*_fields` map container name -> {image, command, args}."""
    spec = _spec(pod)
    errors = []
    if spec.get("hostNetwork") is True and not policy.host_network_allowed:
        errors.append(
            GateError(f"hostNetwork is not allowed on platform {policy.platform}", field="spec.hostNetwork", value=True)
        )
    seen = set()
    for path, container in _containers(spec):
        errors.extend(_check_container(path, container, policy))
        name = container.get("name")
        seen.add(name)
        expected = user_fields if name == user_container else template_fields.get(name)
        if expected is not None:
            errors.extend(_check_protected(path, container, expected, name == user_container))
    if user_container not in seen:
        errors.append(
            GateError("the task's container is missing from the pod", field="spec.containers", value=user_container)
        )
    errors.extend(_check_host_paths(spec, policy, template_host_paths))
    return errors


def _check_container(path: str, container: dict, policy: GatePolicy) -> list[GateError]:
    errors = []
    security = container.get("securityContext")
    if isinstance(security, Mapping) and security.get("privileged") is True and not policy.privileged_allowed:
        errors.append(
            GateError(
                f"privileged containers are not allowed on platform {policy.platform}",
                field=f"{path}.securityContext.privileged",
                value=True,
            )
        )
    errors.extend(_env_refusals(path, container))
    mount_paths = [m.get("mountPath") for m in container.get("volumeMounts") or () if isinstance(m, Mapping)]
    duplicates = sorted({p for p in mount_paths if isinstance(p, str) and mount_paths.count(p) > 1})
    for duplicate in duplicates:
        errors.append(
            GateError("mount path used twice in one container", field=f"{path}.volumeMounts", value=duplicate)
        )
    return errors


def _env_refusals(path: str, container: Mapping) -> list[GateError]:
    """The device selectors a container sets (no one may; `reserved_env`)."""
    return [
        GateError(reason, field=f"{path}.env[{index}].name", value=name)
        for index, name in env_names(container)
        if (reason := reserved_env(name, template=True))
    ]


def check_template(body: object) -> list[GateError]:
    """What a pod template may not set, refused at its save: labels in the portal's reserved domains, device
    selectors in any container's environment."""
    metadata = body.get("metadata") if isinstance(body, Mapping) else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    errors = [
        GateError(reason, field=f"metadata.labels[{key!r}]", value=key)
        for key in (labels if isinstance(labels, Mapping) else ())
        if isinstance(key, str) and (reason := reserved_label(key))
    ]
    for path, container in _containers(_spec(body)):
        errors.extend(_env_refusals(path, container))
    return errors


def _check_protected(path: str, container: dict, expected: Mapping[str, object], is_user: bool) -> list[GateError]:
    errors = []
    for name in _PROTECTED_FIELDS:
        actual, wanted = container.get(name) or None, expected.get(name) or None
        if actual != wanted:
            owner = "the task's" if is_user else "the platform template's"
            errors.append(
                GateError(
                    f"{name} must be {owner} ({wanted!r}); templates and tasks may not change it",
                    field=f"{path}.{name}",
                    value=actual,
                )
            )
    return errors


def _check_host_paths(spec: Mapping, policy: GatePolicy, template_host_paths: set[str]) -> list[GateError]:
    allowed = {_normal(p) for p in policy.allowed_mounts} | template_host_paths
    errors = []
    volumes = spec.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else ()):
        host = volume.get("hostPath") if isinstance(volume, Mapping) else None
        if not isinstance(host, Mapping):
            continue
        path = host.get("path")
        if not isinstance(path, str) or _normal(path) not in allowed:
            errors.append(
                GateError(
                    f"hostPath {path!r} is not allowed on platform {policy.platform}",
                    field=f"spec.volumes[{index}].hostPath.path",
                    value=path,
                )
            )
    return errors


def normalize_mounts(paths: Sequence[str], field: str = "allowed_mounts") -> list[str]:
    """Validate a platform's allowed_mounts (absolute paths)."""
    result = []
    for index, path in enumerate(paths):
        where = join_index(field, index)
        if not isinstance(path, str):
            raise GateError("an allowed mount is a path string", field=where, value=path)
        _check_path(path, where, path)
        result.append(_normal(path))
    return result
