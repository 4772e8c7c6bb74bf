"""Pod checks the OpenAPI schema cannot express, after pkg/apis/core/validation (ValidatePodSpec and friends).

Covered: names (DNS-1123, IANA port names), uniqueness, enum values, labels and annotations, tolerations,
node selector and node affinity syntax, resource names and quantities (extended resources whole and not
overcommitted, requests <= limits). Every check is defensive about types: the schema reports wrong types,
these checks simply skip what they cannot read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal

from pools.engine import k8s_syntax
from pools.engine.k8s_syntax import path_join
from pools.engine.quantity import QuantityError, parse_quantity

__all__ = ["Violation", "container_violations", "semantic_violations", "spec_violations", "volume_names"]

ENUMS = {
    "restartPolicy": ("Always", "OnFailure", "Never"),
    "dnsPolicy": ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
    "preemptionPolicy": ("PreemptLowerPriority", "Never"),
    "imagePullPolicy": ("Always", "IfNotPresent", "Never"),
    "terminationMessagePolicy": ("File", "FallbackToLogsOnError"),
    "protocol": ("TCP", "UDP", "SCTP"),
    "tolerationOperator": ("Equal", "Exists"),
    "taintEffect": ("NoSchedule", "PreferNoSchedule", "NoExecute"),
    "selectorOperator": ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"),
    "os": ("linux", "windows"),
}
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
HUGEPAGES_PREFIX = "hugepages-"
NODE_NAME_FIELD = "metadata.name"
INT64 = 2**63


# The name checks are pure functions of one string, and a platform's pods repeat the same names, keys and
# quantities on every resolve: remember the answers (bounded) instead of re-running the regular expressions.
_NAME_CACHE_SIZE = 8192
dns1123_label_error = functools.lru_cache(_NAME_CACHE_SIZE)(k8s_syntax.dns1123_label_error)
dns1123_subdomain_error = functools.lru_cache(_NAME_CACHE_SIZE)(k8s_syntax.dns1123_subdomain_error)
label_value_error = functools.lru_cache(_NAME_CACHE_SIZE)(k8s_syntax.label_value_error)
port_name_error = functools.lru_cache(_NAME_CACHE_SIZE)(k8s_syntax.port_name_error)
qualified_name_error = functools.lru_cache(_NAME_CACHE_SIZE)(k8s_syntax.qualified_name_error)


@functools.lru_cache(_NAME_CACHE_SIZE)
def _label_key_error(key: str) -> str | None:
    reason = qualified_name_error(key)
    return None if reason is None else f"key {reason}"


@functools.lru_cache(_NAME_CACHE_SIZE)
def _quantity_text(kind: type, raw: object) -> Decimal | QuantityError:
    """parse_quantity(raw).value, or the error; keyed by type too, since 1, 1.0 and True hash alike."""
    try:
        return parse_quantity(raw).value
    except QuantityError as error:
        return error


def _quantity_value(raw: object) -> Decimal | QuantityError:
    try:
        return _quantity_text(type(raw), raw)
    except TypeError:  # unhashable (a signaling NaN): parse it uncached
        return _quantity_text.__wrapped__(type(raw), raw)


@dataclass(frozen=True)
class Violation:
    """One problem in a manifest. `path` is dotted with [index]/[key] parts, e.g. spec.containers[0].name."""

    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class _Report(list):
    def add(self, path: str, reason: str) -> None:
        self.append(Violation(path, reason))

    def enum(self, owner: dict, key: str, enum: str, path: str) -> None:
        value = owner.get(key)
        if isinstance(value, str) and value not in ENUMS[enum]:
            self.add(path_join(path, key), f"unsupported value {value!r}: must be one of {', '.join(ENUMS[enum])}")

    def name(self, value: object, path: str, check) -> None:
        if isinstance(value, str) and (reason := check(value)) is not None:
            self.add(path, reason)


def semantic_violations(manifest: dict) -> list[Violation]:
    report = _Report()
    _check_around_spec(manifest, report)
    spec = manifest.get("spec")
    if isinstance(spec, dict):
        _check_spec(spec, report)
    elif spec is None:
        report.add("spec", "required field is missing")
    return report


def around_spec_violations(manifest: dict) -> list[Violation]:
    """What semantic_violations checks outside the spec (apiVersion, kind, metadata)."""
    report = _Report()
    _check_around_spec(manifest, report)
    return report


def _check_around_spec(manifest: dict, report: _Report) -> None:
    if manifest.get("apiVersion") is None:
        report.add("apiVersion", "required field is missing (expected v1)")
    if manifest.get("kind") is None:
        report.add("kind", "required field is missing (expected Pod)")
    metadata = manifest.get("metadata")
    if metadata is None:
        report.add("metadata", "required field is missing")
    elif isinstance(metadata, dict):
        _check_metadata(metadata, report)


def container_violations(container: dict, volume_names: set[str]) -> list[Violation]:
    """What semantic_violations checks of one entry of spec.containers, duplicate names aside (paths as if
    it were the first): used only to tell valid from invalid."""
    report = _Report()
    report.name(container.get("name"), "spec.containers[0].name", dns1123_label_error)
    _check_container(container, "containers", "spec.containers[0]", volume_names, report)
    return report


def spec_violations(spec: dict) -> list[Violation]:
    """What semantic_violations checks of the pod's spec (used only to tell valid from invalid)."""
    report = _Report()
    _check_spec(spec, report)
    return report


def volume_names(spec: dict) -> set[str]:
    """The names _check_volumes collects."""
    return {v["name"] for v in _list(spec, "volumes") if isinstance(v, dict) and isinstance(v.get("name"), str)}


def _dict(owner: dict, key: str) -> dict:
    value = owner.get(key)
    return value if isinstance(value, dict) else {}


def _list(owner: dict, key: str) -> list:
    value = owner.get(key)
    return value if isinstance(value, list) else []


def _dicts(owner: dict, key: str, path: str):
    """(item, item_path) for every dict in the list owner[key]."""
    items = _list(owner, key)
    if items:
        prefix = path_join(path, key)
        for index, item in enumerate(items):
            if isinstance(item, dict):
                yield item, f"{prefix}[{index}]"


def _check_metadata(metadata: dict, report: _Report) -> None:
    name = metadata.get("name")
    if not name and not metadata.get("generateName"):
        report.add("metadata.name", "name or generateName is required")
    report.name(name, "metadata.name", dns1123_subdomain_error)
    report.name(metadata.get("namespace") or None, "metadata.namespace", dns1123_label_error)
    _check_labels(_dict(metadata, "labels"), "metadata.labels", report)
    for key in _dict(metadata, "annotations"):
        report.name(key, path_join("metadata.annotations", key), qualified_name_error)


def _check_labels(labels: dict, path: str, report: _Report) -> None:
    for key, value in labels.items():
        key_error = _label_key_error(key) if isinstance(key, str) else None
        value_error = label_value_error(value) if isinstance(value, str) else None
        if key_error is not None or value_error is not None:
            key_path = path_join(path, key)
            report.name(key, key_path, _label_key_error)
            report.name(value, key_path, label_value_error)


def _check_spec(spec: dict, report: _Report) -> None:
    for key, enum in (
        ("restartPolicy", "restartPolicy"),
        ("dnsPolicy", "dnsPolicy"),
        ("preemptionPolicy", "preemptionPolicy"),
    ):
        report.enum(spec, key, enum, "spec")
    report.enum(_dict(spec, "os"), "name", "os", "spec.os")
    if "containers" in spec and isinstance(spec["containers"], list) and not spec["containers"]:
        report.add("spec.containers", "at least one container is required")
    volume_names = _check_volumes(spec, report)
    _check_containers(spec, volume_names, report)
    _check_labels(_dict(spec, "nodeSelector"), "spec.nodeSelector", report)
    for toleration, path in _dicts(spec, "tolerations", "spec"):
        _check_toleration(toleration, path, report)
    _check_node_affinity(_dict(_dict(spec, "affinity"), "nodeAffinity"), "spec.affinity.nodeAffinity", report)
    for key in ("overhead",):
        _check_resource_map(_dict(spec, key), path_join("spec", key), report)
    pod_resources = _dict(spec, "resources")
    if pod_resources:
        _check_requirements(pod_resources, "spec.resources", report)
    report.name(spec.get("nodeName") or None, "spec.nodeName", dns1123_subdomain_error)


def _check_volumes(spec: dict, report: _Report) -> set[str]:
    names: set[str] = set()
    for volume, path in _dicts(spec, "volumes", "spec"):
        name = volume.get("name")
        report.name(name, f"{path}.name", dns1123_label_error)
        if isinstance(name, str):
            if name in names:
                report.add(f"{path}.name", f"duplicate volume name {name!r}")
            names.add(name)
    return names


def _check_containers(spec: dict, volume_names: set[str], report: _Report) -> None:
    seen: set[str] = set()
    for list_name in CONTAINER_LISTS:
        for container, path in _dicts(spec, list_name, "spec"):
            name = container.get("name")
            report.name(name, f"{path}.name", dns1123_label_error)
            if isinstance(name, str):
                if name in seen:
                    report.add(f"{path}.name", f"duplicate container name {name!r}")
                seen.add(name)
            _check_container(container, list_name, path, volume_names, report)


def _check_container(container: dict, list_name: str, path: str, volume_names: set[str], report: _Report) -> None:
    if list_name != "ephemeralContainers" and not container.get("image"):
        report.add(f"{path}.image", "image is required")
    report.enum(container, "imagePullPolicy", "imagePullPolicy", path)
    report.enum(container, "terminationMessagePolicy", "terminationMessagePolicy", path)
    restart = container.get("restartPolicy")
    if restart is not None:
        if list_name != "initContainers":
            report.add(f"{path}.restartPolicy", "may only be set on init containers (sidecars)")
        elif restart != "Always":
            report.add(f"{path}.restartPolicy", f"unsupported value {restart!r}: init containers allow only Always")
    _check_ports(container, path, report)
    for mount, mount_path in _dicts(container, "volumeMounts", path):
        name = mount.get("name")
        if isinstance(name, str) and name not in volume_names:
            report.add(f"{mount_path}.name", f"volume {name!r} not found in spec.volumes")
        if mount.get("mountPath") == "":
            report.add(f"{mount_path}.mountPath", "must not be empty")
    requirements = _dict(container, "resources")
    if requirements:
        _check_requirements(requirements, f"{path}.resources", report)


def _check_ports(container: dict, path: str, report: _Report) -> None:
    names: set[str] = set()
    for port, port_path in _dicts(container, "ports", path):
        name = port.get("name")
        if isinstance(name, str) and name:
            report.name(name, f"{port_path}.name", port_name_error)
            if name in names:
                report.add(f"{port_path}.name", f"duplicate port name {name!r}")
            names.add(name)
        _check_port_number(port.get("containerPort"), f"{port_path}.containerPort", 1, report)
        _check_port_number(port.get("hostPort"), f"{port_path}.hostPort", 0, report)
        report.enum(port, "protocol", "protocol", port_path)


def _check_port_number(value: object, path: str, minimum: int, report: _Report) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and not minimum <= value <= 65535:
        report.add(path, f"must be between {max(minimum, 1)} and 65535, inclusive")


def _check_toleration(toleration: dict, path: str, report: _Report) -> None:
    key, operator = toleration.get("key") or "", toleration.get("operator") or "Equal"
    value, effect = toleration.get("value") or "", toleration.get("effect") or ""
    if key:
        report.name(key, f"{path}.key", qualified_name_error)
    elif operator != "Exists":
        report.add(f"{path}.operator", "must be Exists when key is empty (which matches all keys and values)")
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        report.add(f"{path}.effect", "must be NoExecute when tolerationSeconds is set")
    if operator == "Exists" and value:
        report.add(f"{path}.value", "must be empty when operator is Exists")
    elif operator == "Equal":
        report.name(value, f"{path}.value", label_value_error)
    elif isinstance(operator, str) and operator not in ENUMS["tolerationOperator"]:
        hint = (
            " (Gt/Lt need the TaintTolerationComparisonOperators gate, Kubernetes 1.35+)"
            if operator in ("Gt", "Lt")
            else ""
        )
        report.add(f"{path}.operator", f"unsupported value {operator!r}: must be Equal or Exists{hint}")
    if effect:
        report.enum(toleration, "effect", "taintEffect", path)


def _check_node_affinity(affinity: dict, path: str, report: _Report) -> None:
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        if not required.get("nodeSelectorTerms"):
            report.add(f"{required_path}.nodeSelectorTerms", "must have at least one node selector term")
        for term, term_path in _dicts(required, "nodeSelectorTerms", required_path):
            _check_selector_term(term, term_path, report)
    for preferred, preferred_path in _dicts(affinity, "preferredDuringSchedulingIgnoredDuringExecution", path):
        weight = preferred.get("weight")
        if isinstance(weight, int) and not 1 <= weight <= 100:
            report.add(f"{preferred_path}.weight", "must be in the range 1-100")
        _check_selector_term(_dict(preferred, "preference"), f"{preferred_path}.preference", report)


def _check_selector_term(term: dict, path: str, report: _Report) -> None:
    for expression, expression_path in _dicts(term, "matchExpressions", path):
        report.name(expression.get("key"), f"{expression_path}.key", qualified_name_error)
        _check_selector_values(expression, expression_path, report)
    for field, field_path in _dicts(term, "matchFields", path):
        if field.get("key") != NODE_NAME_FIELD:
            report.add(f"{field_path}.key", f"not a supported field selector: only {NODE_NAME_FIELD}")
        if field.get("operator") not in ("In", "NotIn"):
            report.add(f"{field_path}.operator", "must be In or NotIn for field selectors")
        elif len(_list(field, "values")) != 1:
            report.add(f"{field_path}.values", "must have exactly one value for field selectors")


def _check_selector_values(expression: dict, path: str, report: _Report) -> None:
    operator, values = expression.get("operator"), _list(expression, "values")
    if not isinstance(operator, str):
        return
    if operator in ("In", "NotIn") and not values:
        report.add(f"{path}.values", f"must be specified when operator is {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        report.add(f"{path}.values", f"may not be specified when operator is {operator}")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            report.add(f"{path}.values", f"must be specified single value when operator is {operator}")
        elif not (isinstance(values[0], str) and _is_int64(values[0])):
            report.add(f"{path}.values[0]", f"must be an integer for operator {operator}")
    elif operator not in ENUMS["selectorOperator"]:
        report.enum(expression, "operator", "selectorOperator", path)


def _is_int64(text: str) -> bool:
    """strconv.ParseInt(text, 10, 64): optional sign, digits (leading zeros fine), in int64 range."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isascii() and body.isdigit() and -INT64 <= int(text) < INT64


def _check_requirements(requirements: dict, path: str, report: _Report) -> None:
    requests = _check_resource_map(_dict(requirements, "requests"), f"{path}.requests", report)
    limits = _check_resource_map(_dict(requirements, "limits"), f"{path}.limits", report)
    for name, request in requests.items():  # paths are formatted only for a violation: the hot path has none
        limit = limits.get(name)
        if limit is None and name in _dict(requirements, "limits"):
            continue  # the limit itself is invalid and already reported
        if not _overcommit_allowed(name):
            if limit is None:
                report.add(path_join(f"{path}.limits", name), "limit must be set for non-overcommitable resources")
            elif request != limit:
                report.add(
                    path_join(f"{path}.requests", name),
                    f"must be equal to {name} limit of {_typed(requirements, name)}",
                )
        elif limit is not None and request > limit:
            report.add(
                path_join(f"{path}.requests", name),
                f"must be less than or equal to {name} limit of {_typed(requirements, name)}",
            )


def _typed(requirements: dict, name: str) -> str:
    """The limit as its author wrote it ("1Gi", not 1073741824): the error echoes their own unit."""
    return str(_dict(requirements, "limits")[name]).strip()


def _check_resource_map(resources: dict, path: str, report: _Report) -> dict[str, Decimal]:
    """Validate names and quantities; return the parsed values of the valid entries."""
    parsed: dict[str, Decimal] = {}
    for name, raw in resources.items():
        reason = _resource_name_error(name) if isinstance(name, str) else "must be a string"
        if reason is not None:
            report.add(path_join(path, name), f"invalid resource name {name!r}: {reason}")
            continue
        if raw is None or isinstance(raw, (list, dict)):
            continue  # a type error the schema reports
        value = _quantity_value(raw)
        if isinstance(value, QuantityError):
            report.add(path_join(path, name), f"{value.reason} (value: {raw!r})")
        elif value < 0:
            report.add(path_join(path, name), "must be greater than or equal to 0")
        elif _is_extended(name) and value != value.to_integral_value():
            report.add(
                path_join(path, name), f"must be a whole number: {name} is an extended resource (value: {raw!r})"
            )
        else:
            parsed[name] = value
    return parsed


@functools.lru_cache(_NAME_CACHE_SIZE)
def _resource_name_error(name: str) -> str | None:
    if (reason := qualified_name_error(name)) is not None:
        return reason
    if "/" not in name:
        if name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
            return None
        return "must be cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified extended resource"
    if not _is_native(name) and not _is_extended(name):
        return "doesn't follow the extended resource name standard (e.g. no 'requests.' prefix)"
    return None


def _is_native(name: str) -> bool:
    """IsNativeResource: no domain, or a kubernetes.io/ prefixed name."""
    return "/" not in name or "kubernetes.io/" in name


@functools.lru_cache(_NAME_CACHE_SIZE)
def _is_extended(name: str) -> bool:
    """IsExtendedResourceName: not native, and `requests.<name>` is still a qualified name."""
    return (
        not _is_native(name) and not name.startswith("requests.") and qualified_name_error(f"requests.{name}") is None
    )


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not name.startswith(HUGEPAGES_PREFIX)
