"""Every integer field of every config type has a bound checked at the field (issue #31 item 3): an
out-of-range integer sent through the REST door (PUT /api/configs/<type>/<name>) is a 400 naming the
field, the value and the bound, and nothing is written — also far above 2^63, which reached the database
before (a 500 on SQLite, a 400 without a field on PostgreSQL). The fields are found by walking each
registered type's schema for `configs.kinds.Int` kinds (groups and child objects included), so a field added
later is fuzzed without a change here; a type with an Int field needs a valid base document below."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusters.machinepools.kinds import MAX_REPLICAS
from clusters.machinepools.presets import GPU_SPOT_POOL
from configs import registry, store
from configs.kinds import INT_MAX, Children, Group, Int
from configs.models import Revision
from configs.schema import Schema

CHILD = "child"  # the name given to a child object (a pool's platform) holding the field


def int_fields(schema: Schema, prefix: str = "") -> list[tuple[str, Int]]:
    """(document path, kind) of every Int field of `schema`, `CHILD` standing for a child object's name."""
    found = []
    for field in schema.fields:
        path = f"{prefix}{field.name}"
        found.extend(_in_kind(field.kind, path))
    return found


def _in_kind(kind, path: str) -> list[tuple[str, Int]]:
    if isinstance(kind, Int):
        return [(path, kind)]
    if isinstance(kind, Group):
        return [found for sub in kind.fields for found in _in_kind(sub.kind, f"{path}.{sub.name}")]
    if isinstance(kind, Children):
        return int_fields(kind.schema, f"{path}.{CHILD}.")
    return []


def _machine_pool(path: str) -> dict:
    body = GPU_SPOT_POOL.document("sim")
    if path == "replicas":
        body.pop("autoscaling", None)
        body["replicas"] = 1
    return body


# A valid document per config type with Int fields, for the field's path (the doors' own fixtures: backend
# `sim`, pool `batch`).
BASES = {
    "MACHINE_POOL": ("fuzz", _machine_pool),
    "POOL": ("batch", lambda path: store.show("POOL", "batch")),
    "NODE_POOL": ("sim-default", lambda path: store.show("NODE_POOL", "sim-default")),  # the backend's Default
}
FIELDS = sorted(
    (handler.config_type, path, kind)
    for handler in registry.handlers().values()
    if isinstance(getattr(handler, "schema", None), Schema)
    for path, kind in int_fields(handler.schema)
)


def with_value(body: dict, path: str, value: int) -> dict:
    body = copy.deepcopy(body)
    *parents, last = path.split(".")
    node = body
    for key in parents:
        if node.get(key) is None:  # a group shown as null (no GPU resources set)
            node[key] = {}
        node = node[key]
    node[last] = value
    return body


def test_the_walk_finds_the_known_int_fields_and_every_type_with_one_has_a_base():
    paths = {(config_type, path) for config_type, path, _ in FIELDS}
    assert {("MACHINE_POOL", "replicas"), ("MACHINE_POOL", "autoscaling.max_replicas")} <= paths
    assert ("POOL", "resources.gpu.guarantee") in paths
    assert {("NODE_POOL", "admission_seconds"), ("NODE_POOL", "min_runtime_seconds")} <= paths
    assert {config_type for config_type, _, _ in FIELDS} <= BASES.keys()
    assert all(kind.maximum <= INT_MAX for _, _, kind in FIELDS)  # none is unbounded


def _out_of_range(kind: Int) -> st.SearchStrategy[int]:
    return st.one_of(
        st.integers(max_value=kind.minimum - 1),
        st.integers(min_value=kind.maximum + 1),
        st.sampled_from([kind.maximum + 1, 2**31, 2**63, 2**64, -(2**63) - 1, 10**30]),
    )


@st.composite
def _cases(draw):
    config_type, path, kind = draw(st.sampled_from(FIELDS))
    return config_type, path, kind, draw(_out_of_range(kind))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_cases())
def test_an_out_of_range_integer_is_refused_at_its_field_and_nothing_is_written(admin, case):
    config_type, path, kind, value = case
    name, base = BASES[config_type]
    body = with_value(base(path), path.replace(CHILD, "cpu"), value)
    revisions = Revision.objects.count()
    response = admin.put(f"/api/configs/{config_type.lower()}/{name}", {"configs": body}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["field"] == path.replace(CHILD, "cpu") and error["value"] == value, error
    assert str(kind.maximum if value > kind.maximum else kind.minimum) in error["reason"], error  # the bound
    assert Revision.objects.count() == revisions


def test_replicas_are_bounded_by_what_a_rosa_machine_pool_may_have(admin):
    """The issue's 1,000,000,000 replicas: refused at the field, with ROSA's most (500 per machine pool)."""
    for path, value in (("replicas", 10**9), ("autoscaling.max_replicas", 10**9), ("autoscaling.max_replicas", 501)):
        body = with_value(_machine_pool(path), path, value)
        response = admin.put("/api/configs/machine_pool/fuzz", {"configs": body}, format="json")
        assert response.status_code == 400, response.content[:300]
        least = 0 if path == "replicas" else 1
        error = response.json()
        assert {key: error[key] for key in ("field", "value", "reason")} == {
            "field": path,
            "value": value,
            "reason": f"must be an integer from {least} to {MAX_REPLICAS}",
        }
    body = with_value(_machine_pool("replicas"), "replicas", MAX_REPLICAS)
    assert admin.put("/api/configs/machine_pool/fuzz", {"configs": body}, format="json").status_code == 200


@pytest.mark.parametrize("parameter", ["start_index", "count"])
def test_a_huge_page_parameter_is_a_400_naming_it_not_a_database_error(admin, parameter):
    """The user list's OFFSET came from start_index unbounded: 10^30 reached PostgreSQL."""
    response = admin.get("/api/auth/user", {parameter: 10**30})
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["field"] == parameter and str(2**31 - 1) in error["reason"], error


@pytest.mark.parametrize(
    ("field", "items", "reason"),
    [
        ("taints", [{"key": f"k{i}", "value": "v", "effect": "NoSchedule"} for i in range(10_000)], "taints"),
        ("labels", {f"k{i}": "v" for i in range(101)}, "labels"),
    ],
)
def test_a_machine_pool_with_too_many_taints_or_labels_is_refused_by_count(admin, field, items, reason):
    """The issue's 10,000 taints took a 31 s write; now the count is refused before any is read."""
    body = _machine_pool("replicas") | {field: items}
    response = admin.put("/api/configs/machine_pool/fuzz", {"configs": body}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert (error["field"], error["value"]) == (field, len(items)), error
    assert error["reason"] == f"has {len(items)} {reason}; a machine pool may have at most 100", error
