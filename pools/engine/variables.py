"""`{{NAME}}` variables: OSMO's names and precedence, computed from the effective values, with provenance.

Precedence (osmo-reference §2.3): pool `common_default_variables` < platform `default_variables` < the task
(its resources and `--set` values) < system (`USER_CONTAINER_NAME`, `WF_*`). Differences from OSMO, on
purpose: a task value overrides whenever it is given, so `gpu: 0` means zero GPUs; CPU accepts fractions
and millicores; the `_VAL/_UNIT/_Gi…/_m` variants and USER_CACHE follow the effective value (default or task).
The names and values are OSMO's (docs/templates-and-variables.md §3.1, each checked against OSMO's formula in
tests/unit/engine/test_osmo_variables.py), typed: `8`, not OSMO's text `"8.0"`.

Rendering: every string leaf of a template is rendered on its own and the result is data — never parsed as
YAML/JSON and never rendered again. A leaf that is exactly `{{ NAME }}` keeps the variable's native type
when it is a number, bool, list or mapping (so `terminationGracePeriodSeconds: "{{GRACE}}"` is an int).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import marshal
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal

from pools.engine.errors import EngineError
from pools.engine.quantity import QuantityError, parse_quantity
from pools.engine.sandbox import CompiledString, compile_string, render_context, render_string
from pools.engine.schema import expects_only_string
from portal.json_paths import child_origin, join_index, join_key, json_copy

__all__ = [
    "LAYERS",
    "NODE_VARIABLES",
    "SYSTEM_VARIABLES",
    "CompiledTemplate",
    "Variable",
    "VariableError",
    "build_variables",
    "cache_size",
    "check_variable_names",
    "k8s_name",
    "layer_defaults",
    "referenced_variables",
    "variable_values",
]

LAYERS = ("pool", "platform", "task", "system")
RESOURCE_VARIABLES = {"cpu": "USER_CPU", "gpu": "USER_GPU", "memory": "USER_MEMORY", "storage": "USER_STORAGE"}
SIZE_UNITS = {"B": "", "Ki": "Ki", "Mi": "Mi", "Gi": "Gi", "Ti": "Ti"}
# OSMO's `m` unit (src/lib/utils/common.py MEASUREMENTS, 'm': -40 against 'B': -30) is 2^-10 of a byte, not
# Kubernetes' milli: `USER_MEMORY_m` is the amount in bytes times 1024, as OSMO computes it.
OSMO_M_PER_BYTE = 1024
CACHE_SHARE = Decimal("0.9")  # OSMO's USER_CACHE: floor(0.9 x storage), in the storage's unit
NODE_VARIABLES = ("K8_CPU", "K8_GPU", "K8_MEMORY", "K8_STORAGE", "K8_GPU_PRODUCT", "K8_GPU_CUDA_DRIVER")
SYSTEM_VARIABLES = (
    "USER_CONTAINER_NAME",
    "WF_ID",
    "WF_UUID",
    "WF_POOL",
    "WF_PLATFORM",
    "WF_TASK_NAME",
    "WF_TASK_UUID",
    "WF_GROUP_NAME",
    "WF_GROUP_UUID",
    "WF_LEAD_CONTAINER",
    "WF_SUBMITTED_BY",
    "WF_PRIORITY",
    "WF_RETRY_ID",
)
_DERIVED = (
    *(f"{base}_{suffix}" for base in ("USER_MEMORY", "USER_STORAGE") for suffix in ("VAL", "UNIT", *SIZE_UNITS, "m")),
    "USER_CACHE",
)
_TASK_RESERVED = frozenset({*RESOURCE_VARIABLES.values(), *SYSTEM_VARIABLES, *_DERIVED, "USER_EXCLUDED_NODES"})
_OSMO_RESOURCE_KEYS = frozenset({"platform", "topology"})  # part of OSMO's resource spec, not variables
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_JINJA_WORDS = frozenset(
    {
        "and",
        "or",
        "not",
        "in",
        "is",
        "if",
        "else",
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "range",
        "dict",
        "loop",
        "self",
        "super",
        "varargs",
        "kwargs",
        "caller",
    }
)
_NUMBER_AND_UNIT = re.compile(r"(\d+(?:\.\d+)?)([A-Za-z]*)")
_K8S_NAME_INVALID = re.compile(r"[^a-z0-9-]+")
_NATIVE_TYPES = (bool, int, float, list, tuple, dict)


class VariableError(EngineError):
    """A variable with a bad name or value."""


@dataclass(frozen=True)
class Variable:
    value: object
    layer: str  # one of LAYERS

    def as_dict(self) -> dict:
        value = json_copy(self.value) if isinstance(self.value, (list, tuple, dict)) else self.value
        return {"value": value, "layer": self.layer}


def variable_values(variables: Mapping[str, Variable]) -> dict[str, object]:
    return {name: variable.value for name, variable in variables.items()}


# ---------------------------------------------------------------------------------------------- naming


def k8s_name(text: str, limit: int = 63) -> str:
    """A DNS-1123 label from free text; long names keep a short hash so distinct inputs stay distinct."""
    name = _K8S_NAME_INVALID.sub("-", str(text).lower()).strip("-") or "task"
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(str(text).encode()).hexdigest()[:8]
    return f"{name[: limit - 9].rstrip('-')}-{digest}"


def task_input_problems(resources: Mapping[str, object], variables: Mapping[str, object]) -> list[VariableError]:
    """Every problem of a task's resources and extra variables at once (resolution stops at the first):
    a value that is not a quantity, fractional GPUs, a bad variable name. Empty values are not given."""
    problems = []
    for key, value in resources.items():
        if value in (None, "") or key not in RESOURCE_VARIABLES:
            continue
        try:
            _NORMALIZERS[RESOURCE_VARIABLES[key]](value, join_key("resources", key))
        except VariableError as error:
            problems.append(error)
    for name in variables:
        try:
            _check_name(name, "variables")
        except VariableError as error:
            problems.append(error)
    return problems


def check_variable_names(variables: Mapping[str, object], field: str) -> list[str]:
    """Validate admin-defined names; returns warnings for names the system always overrides."""
    if not isinstance(variables, Mapping):
        raise VariableError("variables must be a mapping of NAME: value", field=field)
    warnings = []
    for name in variables:
        _check_name(name, field)
        if name.startswith("K8_"):
            raise VariableError(
                "K8_ variables come from each node and cannot be defined", field=join_key(field, name), value=name
            )
        if name in SYSTEM_VARIABLES:
            warnings.append(f"{field}.{name} is ignored: the system sets {name} for every task")
    return warnings


def _check_name(name: object, field: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in _JINJA_WORDS:
        raise VariableError(
            "a variable name is a letter followed by letters, digits or _ (and not a Jinja word)",
            field=join_key(field, name),
            value=name,
        )


# ---------------------------------------------------------------------------------------------- values


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _quantity(value: object, field: str):
    try:
        quantity = parse_quantity(value.strip() if isinstance(value, str) else value)
    except QuantityError as error:
        raise VariableError(error.reason, field=field, value=value) from None
    if quantity.value < 0:
        raise VariableError("must not be negative", field=field, value=value)
    return quantity


# What one task may ask for (docs/limits.md), at every door (a spec, `?set`, the previews): far above any node
# (a task is one pod on one node), yet low enough that a workflow's tasks add up within the quota columns (2^62
# scheduler units) without overflow. workflows.spec_fields checks a spec's resources against the same numbers.
MAX_TASK_CPU = 2**20  # cores
MAX_TASK_GPU = 1024  # devices
MAX_TASK_BYTES = 2**50  # 1Pi of memory, or of storage


def _normalize_cpu(value: object, field: str) -> int | float:
    quantity = _quantity(value, field)
    if quantity.value > MAX_TASK_CPU:
        raise VariableError(f"is more than {MAX_TASK_CPU} cores, the most a task may ask for", field=field, value=value)
    return _number(quantity.value)


def _normalize_gpu(value: object, field: str) -> int:
    quantity = _quantity(value, field)
    if quantity.value != quantity.value.to_integral_value():
        raise VariableError("GPUs are whole devices", field=field, value=value)
    if quantity.value > MAX_TASK_GPU:
        raise VariableError(f"gpu is a whole number of devices from 0 to {MAX_TASK_GPU}", field=field, value=value)
    return int(quantity.value)


def _normalize_size(value: object, field: str) -> str:
    quantity = _quantity(value, field)
    if quantity.value > MAX_TASK_BYTES:
        reason = f"is more than 1Pi ({MAX_TASK_BYTES} bytes), the most a task may ask for"
        raise VariableError(reason, field=field, value=value)
    return value.strip() if isinstance(value, str) else str(quantity)


def _normalize_nodes(value: object, field: str) -> list[str]:
    if isinstance(value, str) and value.startswith("ARRAY:[") and value.endswith("]"):
        return [item.strip() for item in value[len("ARRAY:[") : -1].split(",") if item.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return list(value)
    raise VariableError("must be a list of node names", field=field, value=value)


_NORMALIZERS: dict[str, Callable[[object, str], object]] = {
    "USER_CPU": _normalize_cpu,
    "USER_GPU": _normalize_gpu,
    "USER_MEMORY": _normalize_size,
    "USER_STORAGE": _normalize_size,
    "USER_EXCLUDED_NODES": _normalize_nodes,
}


@functools.lru_cache(maxsize=1024)
def _size_variants(text: str) -> tuple[tuple[str, object], ...]:
    """(suffix, value) pairs for `_VAL`, `_UNIT` and every unit: 10Gi -> VAL 10, UNIT Gi, Mi 10240, …"""
    quantity = parse_quantity(text)
    split = _NUMBER_AND_UNIT.fullmatch(text)
    if split:
        val, unit = _number(Decimal(split.group(1))), split.group(2)
    else:  # exponent or signed forms: report the plain amount
        val, unit = _number(quantity.value), ""
    converted = tuple((suffix, _number(quantity.in_unit(unit_name))) for suffix, unit_name in SIZE_UNITS.items())
    return (("VAL", val), ("UNIT", unit), *converted, ("m", _number(quantity.value * OSMO_M_PER_BYTE)))


@functools.lru_cache(maxsize=1024)
def cache_size(storage: str) -> str:
    """OSMO's USER_CACHE for a storage quantity: floor(0.9 x the number) in the storage's own unit ("10Gi" ->
    "9Gi", "1.5Gi" -> "1Gi"), as `ResourceSpec.get_allocatable_tokens` (src/utils/connectors/postgres.py)
    computes it when the task gives no cacheSize. Exponent forms have no unit to keep: 0.9 x the bytes."""
    split = _NUMBER_AND_UNIT.fullmatch(storage)
    if split:
        return f"{int(Decimal(split.group(1)) * CACHE_SHARE)}{split.group(2)}"
    return str(int(parse_quantity(storage).value * CACHE_SHARE))


# ---------------------------------------------------------------------------------------------- layering


def layer_defaults(
    pool_variables: Mapping[str, object] | None, platform_variables: Mapping[str, object] | None
) -> dict[str, Variable]:
    """The admin layers alone (pool < platform), normalized; computed once per platform."""
    result: dict[str, Variable] = {}
    for layer, values, field in (
        ("pool", pool_variables, "common_default_variables"),
        ("platform", platform_variables, "default_variables"),
    ):
        for name, value in (values or {}).items():
            result[name] = Variable(_normalize(name, value, join_key(field, name)), layer)
    return result


def build_variables(
    *,
    pool_variables: Mapping[str, object] | None = None,
    platform_variables: Mapping[str, object] | None = None,
    resources: Mapping[str, object] | None = None,
    task_variables: Mapping[str, object] | None = None,
    system: Mapping[str, object] | None = None,
    defaults: Mapping[str, Variable] | None = None,
) -> dict[str, Variable]:
    """Layer the variables (pool < platform < task < system) and add the derived size variants.

    `defaults` (from layer_defaults) replaces `pool_variables`/`platform_variables` when already computed.
    """
    result = dict(defaults) if defaults is not None else layer_defaults(pool_variables, platform_variables)
    for name, value in _task_layer(resources or {}, task_variables or {}):
        result[name] = Variable(value, "task")
    result.setdefault("USER_EXCLUDED_NODES", Variable([], "system"))
    for name, value in (system or {}).items():
        result[name] = Variable(value, "system")
    _add_size_variants(result)
    return result


def _normalize(name: str, value: object, field: str) -> object:
    normalizer = _NORMALIZERS.get(name)
    return value if normalizer is None else normalizer(value, field)


def _task_layer(resources: Mapping[str, object], task_variables: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    if not isinstance(resources, Mapping):
        raise VariableError("resources must be a mapping", field="resources")
    for key, value in resources.items():
        field = join_key("resources", key)
        if value is None or key in _OSMO_RESOURCE_KEYS:
            continue  # "given" means present and not null; 0 is a value
        if key == "nodesExcluded":
            yield "USER_EXCLUDED_NODES", _normalize_nodes(value, field)
        elif key in RESOURCE_VARIABLES:
            name = RESOURCE_VARIABLES[key]
            yield name, _NORMALIZERS[name](value, field)
        else:
            raise VariableError(
                "unknown resource; expected cpu, gpu, memory, storage or nodesExcluded", field=field, value=key
            )
    for name, value in task_variables.items():
        field = join_key("variables", name)
        _check_name(name, "variables")
        if name in _TASK_RESERVED or name.startswith("K8_"):
            raise VariableError(
                f"{name} is set by the system or by the task's resources, not by --set", field=field, value=name
            )
        yield name, value


def _add_size_variants(result: dict[str, Variable]) -> None:
    for base in ("USER_MEMORY", "USER_STORAGE"):
        variable = result.get(base)
        if variable is None:
            continue
        for suffix, value in _size_variants(variable.value):
            result[f"{base}_{suffix}"] = Variable(value, variable.layer)
    storage = result.get("USER_STORAGE")
    if storage is not None:
        result["USER_CACHE"] = Variable(cache_size(storage.value), storage.layer)


# ---------------------------------------------------------------------------------------------- templates


class _Text:
    """A string leaf: literal, bare `{{ NAME }}` (typed), or a Jinja template (text)."""

    __slots__ = ("compiled", "path", "string_only")

    def __init__(self, compiled: CompiledString, path: str) -> None:
        self.compiled = compiled
        self.path = path
        # Typed substitution must not put a number where a Pod only takes strings (env values, labels, args).
        self.string_only = compiled.bare is not None and expects_only_string(path)

    def render(self, context: dict) -> object:
        compiled = self.compiled
        if compiled.is_literal:
            return compiled.source
        try:
            if compiled.bare is not None:
                value = context[compiled.bare] if compiled.bare in context else render_string(compiled, context)
                if isinstance(value, _NATIVE_TYPES) and not (self.string_only and _scalar(value)):
                    return json_copy(value) if isinstance(value, (list, tuple, dict)) else value
                return _as_text(value)
            return render_string(compiled, context)
        except EngineError as error:
            raise error.at(self.path) from None


def _scalar(value: object) -> bool:
    return isinstance(value, (bool, int, float))


def _as_text(value: object) -> str:
    # JSON spelling for booleans (true, not True), so "{{FLAG}}" in an env value reads as YAML users expect.
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _compile_leaf(value: str, path: str) -> object:
    try:
        compiled = compile_string(value)
    except EngineError as error:
        raise error.at(path) from None
    return value if compiled.is_literal else _Text(compiled, path)


def _compile(value: object, path: str) -> object:
    if isinstance(value, dict):
        return {key: _compile(item, join_key(path, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [_compile(item, join_index(path, index)) for index, item in enumerate(value)]
    if isinstance(value, str):
        return _compile_leaf(value, path)
    return value


def _render(node: object, context: dict) -> object:
    if isinstance(node, _Text):
        return node.render(context)
    if isinstance(node, dict):
        return {key: _render(item, context) for key, item in node.items()}
    if isinstance(node, list):
        return [_render(item, context) for item in node]
    return node


def _texts(node: object) -> Iterator[_Text]:
    if isinstance(node, _Text):
        yield node
    elif isinstance(node, dict):
        for item in node.values():
            yield from _texts(item)
    elif isinstance(node, list):
        for item in node:
            yield from _texts(item)


_TEMPLATE_SERIALS = itertools.count(1)
_KEY_MARSHAL_VERSION = 2  # no back-references: equal values give equal bytes


class CompiledTemplate:
    """A template body whose string leaves are compiled once; `render` builds a fresh body per call."""

    def __init__(self, body: object) -> None:
        self._root = _compile(body, "")
        self.leaf_refs: dict[str, frozenset[str]] = {
            t.path: t.compiled.refs for t in _texts(self._root) if t.compiled.refs
        }
        self.refs: frozenset[str] = frozenset().union(*self.leaf_refs.values())
        self.serial = next(_TEMPLATE_SERIALS)  # unique in the process: part of render keys
        self._container_groups: tuple[list[int], list[tuple[str, ...]]] | None = None

    def container_keys(self, rendered: object, containers: list, values: Mapping[str, object]) -> list | None:
        """For each of `containers` (a pod's), a key standing for its value when it is, as an object, the
        container this template rendered at index i (`rendered` is `render(values)`): the rendered value is a
        function of the compiled subtree and the values of the variables it reads, so equal keys mean equal
        containers. None where a container is not one of them (or values cannot be keyed)."""
        spec = rendered.get("spec") if isinstance(rendered, dict) else None
        items = spec.get("containers") if isinstance(spec, dict) else None
        if not isinstance(items, list):
            return None
        groups, group_refs = self._rendered_container_groups()
        if len(items) != len(groups):
            return None
        read: list[bytes | None] = [None] * len(group_refs)  # the values each group reads, keyed once per call
        index_of: dict[int, int] | None = None
        keys: list = []
        serial, count = self.serial, len(items)
        for position, container in enumerate(containers):
            index = position  # the merge keeps the template's order after the task's container, mostly
            if index >= count or items[index] is not container:
                if index_of is None:
                    index_of = {id(item): i for i, item in enumerate(items)}
                index = index_of.get(id(container), -1)
                if index < 0 or items[index] is not container:
                    keys.append(None)
                    continue
            group = groups[index]
            values_key = read[group]
            if values_key is None:
                refs = group_refs[group]
                try:
                    values_key = marshal.dumps(tuple((n in values, values.get(n)) for n in refs), _KEY_MARSHAL_VERSION)
                except ValueError:  # a value marshal cannot write: no keys
                    return None
                read[group] = values_key
            keys.append((serial, index, values_key))
        return keys

    def _rendered_container_groups(self) -> tuple[list[int], list[tuple[str, ...]]]:
        """For each template container (spec.containers[i]), the index of the set of variables it reads, and
        those sets (sorted names): containers reading the same variables share one key of their values."""
        if self._container_groups is None:
            spec = self._root.get("spec") if isinstance(self._root, dict) else None
            items = spec.get("containers") if isinstance(spec, dict) else None
            group_of: dict[tuple[str, ...], int] = {}
            groups = []
            for item in items if isinstance(items, list) else ():
                refs = tuple(sorted(frozenset().union(*(text.compiled.refs for text in _texts(item)))))
                groups.append(group_of.setdefault(refs, len(group_of)))
            self._container_groups = (groups, list(group_of))
        return self._container_groups

    def render(self, values: Mapping[str, object]) -> object:
        """Render with plain values (name -> value). Raises EngineError naming the variable and the path."""
        return _render(self._root, render_context(values))

    def check(self, values: Mapping[str, object]) -> list[EngineError]:
        """Render every string leaf and collect every failure (for config-save checks)."""
        context = render_context(values)
        errors = []
        for text in _texts(self._root):
            try:
                text.render(context)
            except EngineError as error:
                errors.append(error)
        return errors

    def annotate(self, origins: object, label: Callable[[object, frozenset[str]], object]) -> object:
        """Map an origin tree of this body to one whose string leaves carry `label(origin, refs)`."""
        return _annotate(self._root, origins, label)


def _annotate(node: object, origin: object, label: Callable[[object, frozenset[str]], object]) -> object:
    if isinstance(node, (dict, list)) and not node:  # an empty container is a leaf: it gets a label
        return label(None if isinstance(origin, (dict, list)) else origin, frozenset())
    if isinstance(node, dict):
        return {key: _annotate(item, child_origin(origin, key), label) for key, item in node.items()}
    if isinstance(node, list):
        return [_annotate(item, child_origin(origin, index), label) for index, item in enumerate(node)]
    return label(origin, node.compiled.refs if isinstance(node, _Text) else frozenset())


def referenced_variables(template: object) -> set[str]:
    """Every variable a template (a body, a list, or one string) reads, found with jinja2.meta."""
    return set(CompiledTemplate(template).refs)
