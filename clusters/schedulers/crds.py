"""The schedulers' published CRD schemas and the check of generated objects against them.

Each file in crds/ holds one CRD version's `openAPIV3Schema` as published upstream (its `source` names
the repository, path and commit it was read from; descriptions and CEL rules are dropped, and what else
is left out is said there). `validate` checks an object against it with jsonschema, and more strictly
than an apiserver in two ways, because both are translation bugs worth a loud failure:
* a property the schema does not describe is refused (an apiserver prunes it silently);
* `metadata` must carry a DNS-1123 name (and a namespace for a namespaced kind) and label values of at
  most 63 characters.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from clusters.schedulers.errors import SchedulerObjectInvalid

CRD_DIR = Path(__file__).with_name("crds")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class CustomResource:
    """What addresses a custom resource over the API (what `clusters.kube.custom_objects` needs)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@dataclass(frozen=True)
class Crd:
    resource: CustomResource
    schema: dict
    source: dict


@cache
def crds() -> dict[tuple[str, str], Crd]:
    """(apiVersion, kind) -> Crd, for every file in crds/."""
    found = {}
    for path in sorted(CRD_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        resource = CustomResource(
            doc["group"], doc["version"], doc["plural"], doc["kind"], doc["scope"] == "Namespaced"
        )
        found[resource.api_version, resource.kind] = Crd(resource, _closed(doc["openAPIV3Schema"]), doc["source"])
    return found


def _closed(schema: dict) -> dict:
    """The schema with `additionalProperties: false` on every object that lists its properties and says
    nothing of others (`metadata`, a free object, stays free)."""
    schema = copy.deepcopy(schema)

    def close(node: object) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    return schema


def resource_of(obj: dict) -> CustomResource:
    return _crd_of(obj).resource


def _crd_of(obj: dict) -> Crd:
    key = (obj.get("apiVersion"), obj.get("kind"))
    crd = crds().get(key)
    if crd is None:
        known = ", ".join(sorted(f"{v} {k}" for v, k in crds()))
        raise SchedulerObjectInvalid(
            f"no schema for this kind; known: {known}", field="kind", value=f"{key[0]} {key[1]}"
        )
    return crd


def validate(obj: dict) -> None:
    """Raise SchedulerObjectInvalid (field = the path in the object) unless `obj` matches its CRD."""
    from jsonschema import Draft7Validator  # local: only the translation's callers pay for the import

    crd = _crd_of(obj)
    name = _check_metadata(obj, crd.resource)
    validator = _validator(crd.resource.api_version, crd.resource.kind, Draft7Validator)
    error = next(iter(sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        path = ".".join(str(part) for part in error.absolute_path)
        value = error.instance if not isinstance(error.instance, (dict, list)) else None
        reason = _reason(error)
        raise SchedulerObjectInvalid(f"{crd.resource.kind} {name}: {reason}", field=path, value=value)


@cache
def _validator(api_version: str, kind: str, validator_class):
    return validator_class(crds()[api_version, kind].schema)


def _reason(error) -> str:
    if error.validator == "additionalProperties" and error.validator_value is False:
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"unknown field(s) {', '.join(extra)} (the published schema has no such field)"
    return f"{error.message} (schema rule: {error.validator})"


def _check_metadata(obj: dict, resource: CustomResource) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise SchedulerObjectInvalid(f"{resource.kind}: metadata is required", field="metadata", value=None)
    name = meta.get("name")
    if not isinstance(name, str) or not _SUBDOMAIN.match(name) or len(name) > 253:
        raise SchedulerObjectInvalid(
            f"{resource.kind}: metadata.name must be a lowercase DNS-1123 name", field="metadata.name", value=name
        )
    if resource.namespaced != bool(meta.get("namespace")):
        needs = "needs" if resource.namespaced else "must not have"
        raise SchedulerObjectInvalid(
            f"{resource.kind} {name}: {needs} a metadata.namespace",
            field="metadata.namespace",
            value=meta.get("namespace"),
        )
    for key, value in (meta.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise SchedulerObjectInvalid(
                f"{resource.kind} {name}: label values are at most 63 letters, digits, '-', '_', '.'",
                field=f"metadata.labels.{key}",
                value=value,
            )
    return name
