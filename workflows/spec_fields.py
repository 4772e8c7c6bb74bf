"""Field checks behind `workflows.spec`: names, labels, environment, mounts, exit actions, resource amounts,
durations and string lists. Each failure is a SpecError naming the path, the value and the reason."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import NoReturn

from access.services.credentials import KEY_MAX, KEY_RE, MAX_KEYS, check_name
from configs.validators import normalize_exit_actions, parse_timeout, timeout_of
from pools.engine import EngineError, k8s_name, parse_volume_mount
from pools.engine.gates import reserved_env, reserved_label
from pools.engine.k8s_syntax import dns1123_label_error, label_value_error, qualified_name_error
from pools.engine.quantity import QuantityError, parse_quantity
from pools.engine.variables import MAX_TASK_BYTES, MAX_TASK_CPU, MAX_TASK_GPU  # what one task may ask for
from portal.errors import DomainError
from portal.json_paths import join_index, join_key
from portal.numbers import whole_number

__all__ = [
    "MAX_LABELS",
    "MAX_TASK_BYTES",
    "MAX_TASK_CPU",
    "MAX_TASK_GPU",
    "TASK_NAME_MAX",
    "WORKFLOW_NAME_MAX",
    "SpecError",
    "check_bool",
    "check_cpu",
    "check_credentials",
    "check_environment",
    "check_exit_actions",
    "check_gpu",
    "check_labels",
    "check_node_names",
    "check_size",
    "check_task_name",
    "check_unique",
    "check_volume_mounts",
    "check_workflow_name",
    "format_duration",
    "parse_spec_timeout",
    "reserved_prefix",
    "scalar_text",
    "string_list",
]

WORKFLOW_NAME_MAX = 40  # ids are `<name>-<n>`; pod names `<id>-<task>` should stay readable within 63
TASK_NAME_MAX = 63  # the container name (a DNS-1123 label)
MAX_LABELS = 16
MAX_TASK_CREDENTIALS = 16  # credentials one task names
MOUNT_PATH_MAX = 1024
# OSMO's NAMEREGEX (src/utils/job/common.py) for tasks and groups; the container name is its k8s_name.
_TASK_NAME = re.compile(r"[a-zA-Z]([a-zA-Z0-9_-]*[a-zA-Z0-9])?")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")  # Kubernetes EnvVarName


class SpecError(EngineError):
    """A workflow spec the portal refuses: `field` is the path (`groups[1].tasks[0].image`), plus value and why."""


def _fail(reason: str, field: str = "", value: object = None) -> NoReturn:
    raise SpecError(reason, field=field, value=value)


def _quantity(value: object, path: str, example: str):
    try:
        quantity = parse_quantity(value.strip() if isinstance(value, str) else value)
    except QuantityError as error:
        detail = "" if error.reason.startswith("not a quantity") else f" ({error.reason})"
        _fail(f"is not a Kubernetes quantity{detail}; use e.g. {example}", path, value)
    if quantity.value < 0:
        _fail("must not be negative", path, value)
    return quantity


def check_cpu(value: object, path: str) -> str | int | float | None:
    """Cores as a number or quantity: 2, 0.5, "500m", "0" (zero, not "unset"). Returned as written."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        _fail("cpu is a number of cores such as 2, 0.5 or '500m'", path, value)
    if _quantity(value, path, "2, 0.5 or 500m").value > MAX_TASK_CPU:
        _fail(f"is more than {MAX_TASK_CPU} cores, the most a task may ask for", path, value)
    return value.strip() if isinstance(value, str) else value


def check_gpu(value: object, path: str) -> int | None:
    """Whole devices, 0 to MAX_TASK_GPU (2, 2.0 and "2" are all 2; 0 means zero GPUs)."""
    if value is None:
        return None
    whole = int(value) if isinstance(value, float) and value.is_integer() else value  # 1e300 too: then too many
    number = whole_number(whole, 0, MAX_TASK_GPU)
    if number is None:
        _fail(f"gpu is a whole number of devices from 0 to {MAX_TASK_GPU}", path, value)
    return number


def check_size(value: object, path: str) -> str | None:
    """Memory or storage as a Kubernetes quantity (`16Gi`, `500M`, bytes as an integer); `10A`, `Gi` refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        _fail("is a Kubernetes quantity such as '16Gi' or '512Mi'", path, value)
    if _quantity(value, path, "16Gi or 512Mi").value > MAX_TASK_BYTES:
        _fail(f"is more than 1Pi ({MAX_TASK_BYTES} bytes), the most a task may ask for", path, value)
    return value.strip() if isinstance(value, str) else str(value)


def parse_spec_timeout(value: object, path: str) -> timedelta | None:
    """OSMO's TimeoutSpec: seconds (int or float), `<int>{d,h,m,s,ms,us}`, ISO 8601 (`PT1H`), or a timedelta."""
    if value is None or value == "":
        return None
    if isinstance(value, float) and not math.isfinite(value):
        _fail("must be a finite number of seconds", path, value)
    try:
        if isinstance(value, timedelta | float):
            seconds = value.total_seconds() if isinstance(value, timedelta) else value
            return timeout_of(seconds, path, value)  # refuses zero and more than MAX_TIMEOUT_DAYS
        return parse_timeout(value, path)  # ints, short units, ISO 8601, with the same bounds
    except DomainError as error:
        raise SpecError(error.reason, field=error.field, value=error.value) from None


def format_duration(delta: timedelta) -> str:
    """2h, 1h30m, 45s, 1.5s, 2d3h: the short form timeouts are written in."""
    total = delta.total_seconds()
    whole = int(total)
    parts = []
    for unit, seconds in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole >= seconds:
            parts.append(f"{whole // seconds}{unit}")
            whole %= seconds
    rest = whole + (total - int(total))
    if rest or not parts:
        parts.append(f"{rest:g}s")
    return "".join(parts)


def string_list(value: object, path: str, *, required: bool = False, coerce: bool = True) -> list[str]:
    """A list of strings; numbers become strings when `coerce` (YAML `[--epochs, 10]`), booleans must be quoted."""
    if value is None:
        if required:
            _fail("is required: a list of strings such as [python, train.py]", path, value)
        return []
    if not isinstance(value, list):
        _fail("must be a list of strings such as [python, train.py]", path, value)
    items = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            items.append(item)
        elif coerce and isinstance(item, (int, float)) and not isinstance(item, bool):
            items.append(str(item))
        else:
            hint = " (quote it: YAML reads yes/no/true/false as booleans)" if isinstance(item, bool) else ""
            _fail(f"must be a string{hint}", join_index(path, index), item)
    return items


# ---------------------------------------------------------------------------------------------- names and maps


def check_workflow_name(value: object) -> str:
    if not isinstance(value, str) or not value:
        _fail("is required: a lowercase name such as train-resnet", "name", value)
    if len(value) > WORKFLOW_NAME_MAX:
        _fail(f"must be at most {WORKFLOW_NAME_MAX} characters (workflow ids are <name>-<n>)", "name", value)
    reason = dns1123_label_error(value)
    if reason:
        suggestion = k8s_name(value.replace("_", "-"), WORKFLOW_NAME_MAX)
        _fail(f"{reason} (for example {suggestion!r})", "name", value)
    return value


def check_task_name(value: object, path: str, kind: str) -> str:
    if not isinstance(value, str) or not value:
        _fail(f"a {kind} needs a name", path, value)
    if len(value) > TASK_NAME_MAX:
        _fail(f"must be at most {TASK_NAME_MAX} characters", path, value)
    if not _TASK_NAME.fullmatch(value):
        _fail(
            "must start with a letter, end with a letter or digit, and contain only letters, digits, '-' and '_'",
            path,
            value,
        )
    return value


def check_unique(names: list[tuple[str, str]]) -> None:
    """Task and group names are unique ignoring case, with '-' and '_' equal (they share container names)."""
    seen: dict[str, str] = {}
    for name, path in names:
        key = k8s_name(name)
        if key in seen:
            _fail(
                f"has the same name as {seen[key]} (names compare ignoring case, with '-' equal to '_')",
                join_key(path, "name"),
                name,
            )
        seen[key] = path


def check_labels(data: object) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        _fail("must be a mapping of label key to value", "labels", data)
    if len(data) > MAX_LABELS:
        _fail(f"at most {MAX_LABELS} labels are allowed", "labels", len(data))
    labels = {}
    for key, value in data.items():
        path = join_key("labels", key)
        if not isinstance(key, str):
            _fail("a label key is a string", path, key)
        reason = qualified_name_error(key)
        if reason:
            _fail(f"label key {reason}", path, key)
        reason = reserved_label(key)
        if reason:
            _fail(reason, path, key)
        reserved = reserved_prefix(key)
        if reserved:
            _fail(
                f"the label prefix {reserved} is reserved for Kubernetes (kubernetes.io and k8s.io, with any "
                "subdomain); choose your own prefix",
                path,
                key,
            )
        text = scalar_text(value, path, "label value")
        reason = label_value_error(text)
        if reason:
            _fail(f"label value {reason}", path, value)
        labels[key] = text
    return labels


_RESERVED_DOMAINS = ("kubernetes.io", "k8s.io")


def reserved_prefix(key: str) -> str:
    """The key's prefix (`node.kubernetes.io` of `node.kubernetes.io/x`) when Kubernetes reserves it, else ''."""
    prefix = key.rpartition("/")[0].lower()
    reserved = any(prefix == domain or prefix.endswith("." + domain) for domain in _RESERVED_DOMAINS)
    return f"{prefix}/" if reserved else ""


def scalar_text(value: object, path: str, what: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    _fail(f"a {what} is a string (numbers and booleans are converted)", path, value)


def check_environment(data: object, path: str) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        _fail("must be a mapping of NAME: value", path, data)
    environment = {}
    for key, value in data.items():
        where = join_key(path, key)
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            _fail(
                "an environment variable name has letters, digits, '_', '-' or '.', and does not start with a digit",
                where,
                key,
            )
        reason = reserved_env(key)
        if reason:
            _fail(reason, where, key)
        if value is None:
            _fail("has no value: give a string ('' for empty)", where, value)
        environment[key] = scalar_text(value, where, "environment value")
    return environment


def check_credentials(data: object, path: str) -> dict[str, str | dict[str, str]]:
    """OSMO's task `credentials:` (src/utils/job/task.py TaskSpec): `{name: /mount/dir}` (every key of the
    credential a file there) or `{name: {ENV_VAR: key}}`. Whether they exist is checked at submission."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        _fail("must be a mapping of credential name: /mount/path or {ENV_VAR: key}", path, data)
    if len(data) > MAX_TASK_CREDENTIALS:
        _fail(f"names {len(data)} credentials; at most {MAX_TASK_CREDENTIALS}", path, len(data))
    checked: dict[str, str | dict[str, str]] = {}
    for name, use in data.items():
        where = join_key(path, str(name))
        try:
            check_name(name, where)
        except DomainError as error:
            raise SpecError(error.reason, field=error.field, value=error.value) from None
        checked[name] = _mount_path(use, where) if isinstance(use, str) else _env_keys(use, where)
    return checked


def _mount_path(value: str, where: str) -> str:
    parts = [part for part in value.split("/") if part]
    if not value.startswith("/") or not parts or len(value) > MOUNT_PATH_MAX or ".." in parts:
        _fail(f"a mount path is absolute, at most {MOUNT_PATH_MAX} characters, without '..'", where, value)
    if parts[0] == "osmo" or any(c in value for c in ',?"<>|\r\n\\:'):
        _fail('a mount path may not be under /osmo nor hold , ? " < > | : or a backslash', where, value)
    return "/" + "/".join(parts)


def _env_keys(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        _fail("is a mount path (/dir) or a mapping of ENV_VAR: key of the credential", where, value)
    if len(value) > MAX_KEYS:
        _fail(f"sets {len(value)} variables; at most {MAX_KEYS}", where, len(value))
    envs = {}
    for env, key in value.items():
        at = join_key(where, str(env))
        if not isinstance(env, str) or not _ENV_NAME.fullmatch(env):
            _fail("an environment variable name has letters, digits, '_', '-' or '.'", at, env)
        if reserved_env(env):
            _fail(reserved_env(env), at, env)
        if not isinstance(key, str) or not KEY_RE.match(key) or len(key) > KEY_MAX:
            _fail("names a key of the credential (letters, digits, '-', '_' and '.')", at, key)
        envs[env] = key
    return envs


def check_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        _fail("must be true or false", path, value)
    return value


def check_volume_mounts(data: object, path: str) -> list[str]:
    mounts = string_list(data, path, coerce=False)
    for index, mount in enumerate(mounts):
        try:
            parse_volume_mount(mount, join_index(path, index))
        except EngineError as error:
            raise SpecError(error.reason, field=error.field, value=error.value) from None
    return mounts


def check_exit_actions(data: object, path: str) -> dict[str, str]:
    try:
        return normalize_exit_actions(data, path)
    except DomainError as error:
        raise SpecError(error.reason, field=error.field, value=error.value) from None


def check_node_names(data: object, path: str) -> list[str]:
    names = string_list(data, path, coerce=False)
    for index, name in enumerate(names):
        if not name.strip():
            _fail("a node name is a non-empty string", join_index(path, index), name)
    return names
