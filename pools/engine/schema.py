"""Validate a resolved Pod manifest: strict OpenAPI schema plus the semantic checks the schema cannot express.

The JSON schemas are the ones bundled with the `kubernetes_validate` package (strict variant: unknown fields
are errors). `kubernetes_validate.validate` re-reads 1.4 MB of JSON on every call; here each version is
loaded once, stripped of descriptions, and turned into two checkers:

* a compiled boolean checker (closures over the handful of keywords these schemas use) for the common
  case: a valid manifest costs tens of microseconds;
* a cached `jsonschema` Draft 2020-12 validator, run only when the fast checker says "invalid", to
  report every problem with its path. It is also the fallback if a schema ever uses a keyword the
  compiler does not know.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import marshal
import re
from collections.abc import Callable

from pools.engine.errors import EngineError
from pools.engine.k8s_syntax import format_path, path_join
from pools.engine.schema_checks import (
    Violation,
    around_spec_violations,
    container_violations,
    semantic_violations,
    spec_violations,
    volume_names,
)

__all__ = ["Violation", "supported_versions", "validate_pod"]

_SCHEMA_KEYWORDS = {
    "type",
    "$ref",
    "additionalProperties",
    "properties",
    "items",
    "required",
    "enum",
    "oneOf",
}
_DEFS_POINTER = "/$defs/"
_DEFINITIONS_DOCUMENT = "/api/_definitions.json"  # how pod-v1.json refers to _definitions.json
_CONTAINER_DEFINITION = "io.k8s.api.core.v1.Container"
_SPEC_DEFINITION = "io.k8s.api.core.v1.PodSpec"
_VERSION = re.compile(r"v?(\d+)\.(\d+)(\.\d+)?")


def validate_pod(manifest: dict, version: str = "1.33", *, container_keys: list | None = None) -> list[Violation]:
    """Every schema and semantic violation in a Pod manifest (empty list = valid), in a stable order.

    `container_keys` (optional, one per spec.containers item, None for "unknown") are hashable stand-ins for
    containers' values that the caller can make cheaper than serializing them (a template's render key:
    CompiledTemplate.container_keys); equal keys must mean equal containers."""
    if not isinstance(manifest, dict):
        return [Violation("", f"manifest must be an object, not {type(manifest).__name__}")]
    schema_version = _schema_version(version)
    checker = _checker_for(schema_version)
    if _valid_by_parts(checker, schema_version, manifest, container_keys):
        return []
    found = [] if checker.is_valid(manifest) else checker.violations(manifest)
    found.extend(semantic_violations(manifest))
    return list(dict.fromkeys(found))  # de-duplicate, keep order


# A platform's template renders most of a pod alike for many tasks (volumes, tolerations, selectors, the
# sidecars and control container, the user container's template part for the same resources): remember
# which parts were valid, so a resolve validates only the parts its task and variables made different.
# Parts are the spec without its containers, and each container (under the volume names it may mount);
# keyed by their serialized value (see _part_key), which tells JSON values apart (1, 1.0, True and "1"
# included). Only "valid" is remembered: any problem re-runs the whole validation, which reports in its
# usual order.
_VALID_PARTS: dict[tuple, set[object]] = {}  # (version, "spec" or the volume names) -> valid parts' keys
_VALID_PARTS_LIMIT = 4096  # keys per context, and contexts
_MARSHAL_VERSION = 2  # the newest format without back-references: equal values give equal bytes


def _part_key(value: object) -> bytes | str:
    """The value's marshal bytes (a faithful, typed encoding, 4x faster than repr), or its repr when it
    holds something marshal cannot write. Equal keys mean equal values; equal values almost always
    give equal keys (a miss only costs a validation)."""
    try:
        return marshal.dumps(value, _MARSHAL_VERSION)
    except ValueError:
        return repr(value)


def _part_keys(values: list) -> list[bytes | str]:
    try:  # one comprehension of C calls: the containers of a wide pod are most of a validation's cost
        return [marshal.dumps(value, _MARSHAL_VERSION) for value in values]
    except ValueError:
        return [_part_key(value) for value in values]


def _seen(context: tuple) -> set[bytes | str]:
    seen = _VALID_PARTS.get(context)
    if seen is None or len(seen) >= _VALID_PARTS_LIMIT:
        if len(_VALID_PARTS) >= _VALID_PARTS_LIMIT:
            _VALID_PARTS.clear()
        seen = _VALID_PARTS[context] = set()
    return seen


def _valid_by_parts(
    checker: _PodChecker, version: tuple[int, int], manifest: dict, container_keys: list | None = None
) -> bool:
    """True only if the manifest is valid: the pod around its spec, the spec without its containers, then
    each container (the last two memoised). The schema checks each property on its own, and the semantic
    checks look across containers only for duplicate names (checked here) and volume names (in the key)."""
    spec = manifest.get("spec")
    container_check, spec_check = checker.container_check, checker.spec_check
    if container_check is None or spec_check is None or not isinstance(spec, dict) or "initContainers" in spec:
        return False
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers or "ephemeralContainers" in spec:
        return False
    names: set[str] = set()
    for container in containers:
        if not isinstance(container, dict):
            return False
        name = container.get("name")
        if isinstance(name, str):
            if name in names:
                return False  # a duplicate name: let the full check report it
            names.add(name)
    if not checker.is_valid({**manifest, "spec": {"containers": []}}) or around_spec_violations(manifest):
        return False
    rest = {key: value for key, value in spec.items() if key != "containers"}
    seen, key = _seen((version, "spec")), _part_key(rest)
    if key not in seen:
        if not spec_check({**rest, "containers": []}) or spec_violations(rest):
            return False
        seen.add(key)
    volumes = frozenset(volume_names(spec))
    seen = _seen((version, volumes))
    if container_keys is None or len(container_keys) != len(containers):
        keys = _part_keys(containers)
    else:
        keys = [_part_key(c) if k is None else k for k, c in zip(container_keys, containers, strict=True)]
    for key, container in zip(keys, containers, strict=True):
        if key not in seen:
            if not container_check(container) or container_violations(container, volumes):
                return False
            seen.add(key)
    return True


def supported_versions() -> list[str]:
    """The Kubernetes minor versions whose schemas are bundled, oldest first ("1.25", ...)."""
    return [".".join(map(str, v)) for v in sorted(_bundled_versions())]


# ---------------------------------------------------------------------------------------------- loading


@functools.cache
def _bundled_versions() -> dict[tuple[int, int], str]:
    root = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
    found = {}
    for entry in root.iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if match:
            found[(int(match[1]), int(match[2]))] = entry.name
    return found


def _schema_version(version: str) -> tuple[int, int]:
    """The newest bundled version not newer than `version` (what kubernetes_validate does)."""
    return _known_version(version) if isinstance(version, str) else _pick_version(version)


@functools.lru_cache(maxsize=64)
def _known_version(version: str) -> tuple[int, int]:
    return _pick_version(version)  # every pod validation asks: answered once per spelling


def _pick_version(version: object) -> tuple[int, int]:
    match = _VERSION.fullmatch(str(version).strip())
    if match is None:
        raise EngineError("not a Kubernetes version (expected e.g. 1.33)", field="version", value=version)
    wanted = (int(match[1]), int(match[2]))
    bundled = sorted(_bundled_versions())
    candidates = [v for v in bundled if v <= wanted]
    if not candidates or wanted > bundled[-1]:
        raise EngineError(
            f"no bundled schema for Kubernetes {wanted[0]}.{wanted[1]} "
            f"(supported: {supported_versions()[0]} to {supported_versions()[-1]})",
            field="version",
            value=version,
        )
    return candidates[-1]


def _load(directory: str, name: str) -> dict:
    root = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema" / directory
    return json.loads((root / name).read_text(encoding="utf-8"))


def _strip(schema: object, *, in_names: bool = False) -> object:
    """Keep only keywords that affect validation (descriptions and x-kubernetes-* are most of the bytes)."""
    if isinstance(schema, list):
        return [_strip(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if in_names:  # keys are property/definition names, values are schemas
        return {name: _strip(sub) for name, sub in schema.items()}
    kept = {}
    for key, value in schema.items():
        if key in ("properties", "$defs"):
            kept[key] = _strip(value, in_names=True)
        elif key in ("enum", "required", "$id", "$schema"):
            kept[key] = value
        elif key in _SCHEMA_KEYWORDS:
            kept[key] = _strip(value)
    return kept


@functools.cache
def _checker_for(version: tuple[int, int]) -> _PodChecker:
    directory = _bundled_versions()[version]
    return _PodChecker(_strip(_load(directory, "pod-v1.json")), _strip(_load(directory, "_definitions.json")))


# --------------------------------------------------------------------------------------------- checking


class _Unsupported(Exception):
    """The schema uses something the fast compiler does not model: use jsonschema for everything."""


class _PodChecker:
    def __init__(self, pod_schema: dict, definitions: dict) -> None:
        self._pod_schema = pod_schema
        self._definitions = definitions
        self._validator = None
        self.container_check: Callable[[object], bool] | None = None  # one entry of spec.containers
        self.spec_check: Callable[[object], bool] | None = None  # the pod's spec
        try:
            compiler = _Compiler(definitions["$defs"])
            self._fast: Callable[[object], bool] | None = compiler.compile(pod_schema)
            self.container_check = compiler.compiled_definition(_CONTAINER_DEFINITION)
            self.spec_check = compiler.compiled_definition(_SPEC_DEFINITION)
        except _Unsupported:
            self._fast = None

    def is_valid(self, manifest: dict) -> bool:
        if self._fast is not None:
            return self._fast(manifest)
        return not self.violations(manifest)

    def violations(self, manifest: dict) -> list[Violation]:
        found: list[Violation] = []
        for error in self._jsonschema().iter_errors(manifest):
            found.extend(_translate(error))
        return found

    def _jsonschema(self):
        if self._validator is None:
            import jsonschema  # only needed when a manifest is invalid
            from referencing import Registry, Resource

            registry = Registry().with_resources(
                (doc["$id"], Resource.from_contents(doc)) for doc in (self._pod_schema, self._definitions)
            )
            self._validator = jsonschema.Draft202012Validator(self._pod_schema, registry=registry)
        return self._validator


_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def _type_phrase(types: object) -> str:
    names = [types] if isinstance(types, str) else [t for t in types if t != "null"] or list(types)
    return " or ".join(_JSON_TYPES.get(t, t) for t in names)


def _translate(error) -> list[Violation]:
    """Turn one jsonschema error into violations that point at the offending field."""
    path = format_path(error.absolute_path)
    kind, instance, schema = error.validator, error.instance, error.schema
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = schema.get("properties", {})
        return [Violation(path_join(path, key), "unknown field") for key in instance if key not in known]
    if kind == "required" and isinstance(instance, dict):
        return [
            Violation(path_join(path, key), "required field is missing")
            for key in error.validator_value
            if key not in instance
        ]
    if kind == "type":
        return [Violation(path, f"must be {_type_phrase(error.validator_value)}, not {_json_name(instance)}")]
    if kind == "enum":
        return [Violation(path, f"must be one of: {', '.join(map(str, error.validator_value))}")]
    if kind == "oneOf":
        shapes = " or ".join(_type_phrase(branch.get("type", "any")) for branch in error.validator_value)
        return [Violation(path, f"must be {shapes}, not {_json_name(instance)}")]
    return [Violation(path, error.message)]


def _json_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def _type_test(names: object) -> Callable[[object], bool]:
    """jsonschema's default type semantics: bool is not a number, 1.0 is an integer."""
    allowed = {names} if isinstance(names, str) else set(names)
    unknown = allowed - set(_JSON_TYPES)
    if unknown:
        raise _Unsupported(f"type {unknown}")
    number, integer = "number" in allowed, "integer" in allowed
    plain = _PLAIN_TYPES.get(next(iter(allowed - {"null"}))) if len(allowed - {"null"}) == 1 else None
    if plain is not None:  # string, object, array, boolean, nullable or not: one isinstance
        if "null" in allowed:
            return lambda value: value is None or isinstance(value, plain)
        return lambda value: isinstance(value, plain)
    single = _single_type_test(allowed - {"null"})  # integer, number: one short test
    if single is not None:
        if "null" not in allowed:
            return single
        return lambda value: value is None or single(value)

    def test(value: object) -> bool:
        if isinstance(value, str):
            return "string" in allowed
        if isinstance(value, dict):
            return "object" in allowed
        if isinstance(value, list):
            return "array" in allowed
        if isinstance(value, bool):
            return "boolean" in allowed
        if isinstance(value, int):
            return number or integer
        if isinstance(value, float):
            return number or (integer and value.is_integer())
        return value is None and "null" in allowed

    return test


_PLAIN_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool}


def _single_type_test(allowed: set[str]) -> Callable[[object], bool] | None:
    """The general test below, specialised to one type (same answers: bool is not a number, 1.0 is an integer)."""
    if len(allowed) != 1:
        return None
    name = next(iter(allowed))
    if name == "string":
        return lambda value: isinstance(value, str)
    if name == "object":
        return lambda value: isinstance(value, dict)
    if name == "array":
        return lambda value: isinstance(value, list)
    if name == "boolean":
        return lambda value: isinstance(value, bool)
    if name == "integer":
        return lambda value: (
            not isinstance(value, bool) and isinstance(value, int) or isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return lambda value: not isinstance(value, bool) and isinstance(value, (int, float))
    return None


class _Compiler:
    """Compiles the schema subset Kubernetes uses into nested closures returning True/False."""

    def __init__(self, definitions: dict) -> None:
        self._definitions = definitions
        self._by_ref: dict[str, Callable[[object], bool]] = {}

    def compile(self, schema: dict) -> Callable[[object], bool]:
        if not isinstance(schema, dict) or set(schema) - _SCHEMA_KEYWORDS - {"$id", "$schema"}:
            raise _Unsupported(str(schema)[:80])
        checks: list[Callable[[object], bool]] = []
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        if "type" in schema:
            checks.append(_type_test(schema["type"]))
        if "enum" in schema:
            checks.append(self._enum(schema["enum"]))
        if any(k in schema for k in ("properties", "additionalProperties", "required")):
            kind = schema.get("type")
            if kind in ("object", ["object", "null"]) and len(checks) == 1 and "$ref" not in schema:
                # the type test folded into the walk
                checks[0] = self._object(schema, must_be_object=True, allow_none=kind != "object")
            else:
                checks.append(self._object(schema))
        if "items" in schema:
            checks.append(self._items(schema["items"]))
        if "oneOf" in schema:
            checks.append(self._one_of(schema["oneOf"]))
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            first, second = checks
            return lambda value: first(value) and second(value)
        return lambda value: all(check(value) for check in checks)

    def compiled_definition(self, name: str) -> Callable[[object], bool] | None:
        return self._by_ref.get(name)

    def _ref(self, ref: str) -> Callable[[object], bool]:
        document, _, pointer = ref.partition("#")
        if document not in ("", _DEFINITIONS_DOCUMENT) or not pointer.startswith(_DEFS_POINTER):
            raise _Unsupported(ref)
        name = pointer.removeprefix(_DEFS_POINTER)
        if name not in self._by_ref:
            cell: list[Callable[[object], bool]] = []
            self._by_ref[name] = lambda value: cell[0](value)  # forward reference: schemas may recurse
            cell.append(self.compile(self._definitions[name]))
            self._by_ref[name] = cell[0]
        return self._by_ref[name]

    @staticmethod
    def _enum(values: list) -> Callable[[object], bool]:
        if not all(isinstance(v, str) for v in values):
            raise _Unsupported("non-string enum")
        allowed = frozenset(values)
        return lambda value: isinstance(value, str) and value in allowed

    def _object(
        self, schema: dict, *, must_be_object: bool = False, allow_none: bool = False
    ) -> Callable[[object], bool]:
        properties = {name: self.compile(sub) for name, sub in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        extra_check = None if isinstance(extra, bool) else self.compile(extra)
        closed = extra is False
        required = tuple(schema.get("required", ()))

        def check(value: object) -> bool:
            if not isinstance(value, dict):
                return not must_be_object or (allow_none and value is None)
            for name in required:
                if name not in value:
                    return False
            for key, item in value.items():
                sub = properties.get(key)
                if sub is not None:
                    if not sub(item):
                        return False
                elif closed or (extra_check is not None and not extra_check(item)):
                    return False
            return True

        return check

    def _items(self, items: object) -> Callable[[object], bool]:
        if not isinstance(items, dict):
            raise _Unsupported("tuple items")
        item_check = self.compile(items)

        def check(value: object) -> bool:
            if isinstance(value, list):
                for item in value:
                    if not item_check(item):
                        return False
            return True

        return check

    def _one_of(self, branches: list) -> Callable[[object], bool]:
        compiled = [self.compile(branch) for branch in branches]
        if len(compiled) == 2:  # IntOrString and friends: exactly one of two
            first, second = compiled
            return lambda value: bool(first(value)) is not bool(second(value))
        return lambda value: sum(1 for check in compiled if check(value)) == 1


# ----------------------------------------------------------------------------------- types at a path

_SEGMENT = re.compile(r'\.?([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def expects_only_string(path: str, version: str = "1.33") -> bool:
    """True when the Pod schema accepts only a string at `path` (e.g. `spec.containers[0].env[0].value`,
    `metadata.labels["team"]`), False when it also accepts numbers (quantities) or the path is unknown."""
    return _expects_only_string(_schema_version(version), path)


@functools.lru_cache(maxsize=4096)
def _expects_only_string(version: tuple[int, int], path: str) -> bool:
    checker = _checker_for(version)
    schema: object = checker._pod_schema
    for key, index in _segments(path):
        schema = _resolve_ref(schema, checker._definitions["$defs"])
        if not isinstance(schema, dict):
            return False
        if index is not None:
            schema = schema.get("items")
        else:
            schema = (schema.get("properties") or {}).get(key, schema.get("additionalProperties"))
    schema = _resolve_ref(schema, checker._definitions["$defs"])
    if not isinstance(schema, dict) or "oneOf" in schema or "anyOf" in schema:
        return False
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    return bool(types) and set(types) <= {"string", "null"}


def _resolve_ref(schema: object, definitions: dict) -> object:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = definitions.get(schema["$ref"].rsplit("/", 1)[-1])
    return schema


def _segments(path: str) -> list[tuple[str | None, int | None]]:
    segments, position = [], 0
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if not match or match.end() == position:
            return []
        plain, index, quoted = match.groups()
        if index is not None:
            segments.append((None, int(index)))
        else:
            segments.append((plain if plain is not None else json.loads(quoted), None))
        position = match.end()
    return segments
