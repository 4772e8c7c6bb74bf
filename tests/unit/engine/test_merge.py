"""Template merge: OSMO's conformance cases (NVIDIA/OSMO's `src/lib/utils/tests/test_common.py` and
`src/utils/job/tests/test_task.py`), the `$patch` directive, provenance, properties."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import EngineError
from pools.engine.merge import MergeError, merge, merge_templates, merge_traced
from portal.json_paths import iter_leaves

# --------------------------------------------------------------------------- OSMO conformance (test_common.py)

OSMO_CASES = [
    (
        "same name merges (value 1 -> 2)",
        {"l": [{"name": "a", "value": 1}]},
        {"l": [{"name": "a", "value": 2}]},
        {"l": [{"name": "a", "value": 2}]},
    ),
    (
        "different names append",
        {"l": [{"name": "a", "value": 1}]},
        {"l": [{"name": "b", "value": 2}]},
        {"l": [{"name": "a", "value": 1}, {"name": "b", "value": 2}]},
    ),
    (
        "item without name appends",
        {"l": [{"name": "a", "value": 1}]},
        {"l": [{"value": 2}]},
        {"l": [{"name": "a", "value": 1}, {"value": 2}]},
    ),
    ("scalar replaced", {"x": 1}, {"x": 2}, {"x": 2}),
    ("new key added", {"x": 1}, {"y": 2}, {"x": 1, "y": 2}),
    ("nested dict merge", {"d": {"x": 1, "y": 2}}, {"d": {"y": 20, "z": 3}}, {"d": {"x": 1, "y": 20, "z": 3}}),
    ("list replaces a scalar", {"x": 1}, {"x": [1, 2]}, {"x": [1, 2]}),
    ("lists without names are concatenated", {"args": ["-a"]}, {"args": ["-b", "-a"]}, {"args": ["-a", "-b", "-a"]}),
    ("empty overlay list is a no-op", {"l": [{"name": "a"}]}, {"l": []}, {"l": [{"name": "a"}]}),
    ("empty overlay dict is a no-op", {"d": {"x": 1}}, {"d": {}}, {"d": {"x": 1}}),
    ("null replaces", {"x": 1}, {"x": None}, {"x": None}),
    ("dict replaces a scalar (OSMO would crash)", {"x": 1}, {"x": {"y": 2}}, {"x": {"y": 2}}),
    (
        "the last base item of a repeated name is the one merged",
        {"l": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]},
        {"l": [{"name": "a", "v": 3}]},
        {"l": [{"name": "a", "v": 1}, {"name": "a", "v": 3}]},
    ),
    (
        "overlay items merge only into base items, not into each other",
        {"l": []},
        {"l": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]},
        {"l": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]},
    ),
    (
        "strings containing 'name' are plain items (no OSMO substring bug)",
        {"args": ["--username"]},
        {"args": ["--name", "--username"]},
        {"args": ["--username", "--name", "--username"]},
    ),
    (
        "a string item named like a dict item does not merge",
        {"l": [{"name": "a"}]},
        {"l": ["a"]},
        {"l": [{"name": "a"}, "a"]},
    ),
]


@pytest.mark.parametrize(("case", "base", "overlay", "expected"), OSMO_CASES, ids=[c[0] for c in OSMO_CASES])
def test_osmo_merge_semantics(case, base, overlay, expected):
    assert merge(base, overlay) == expected


def _containers(*containers):
    return {"spec": {"containers": list(containers)}}


def test_override_ephemeral_storage_of_one_container_leaves_the_other_untouched():  # test_task.py
    base = _containers(
        {"name": "user", "resources": {"limits": {"ephemeral-storage": "10Gi", "cpu": "1"}}},
        {"name": "osmo-ctrl", "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
    )
    overlay = _containers({"name": "user", "resources": {"limits": {"ephemeral-storage": "50Gi"}}})
    result = merge(base, overlay)["spec"]["containers"]
    assert result[0]["resources"]["limits"] == {"ephemeral-storage": "50Gi", "cpu": "1"}
    assert result[1] == base["spec"]["containers"][1]


def test_volumes_and_volume_mounts_are_appended():  # test_pod_template_override_volumes
    base = {
        "spec": {
            "volumes": [{"name": "a", "emptyDir": {}}],
            "containers": [{"name": "user", "volumeMounts": [{"name": "a", "mountPath": "/a"}]}],
        }
    }
    overlay = {
        "spec": {
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
            "containers": [{"name": "user", "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}],
        }
    }
    result = merge(base, overlay)["spec"]
    assert [v["name"] for v in result["volumes"]] == ["a", "shm"]
    assert [m["mountPath"] for m in result["containers"][0]["volumeMounts"]] == ["/a", "/dev/shm"]


@pytest.mark.parametrize("overlay", [{}, {"spec": {}}, {"spec": {"containers": []}}, {"spec": {"volumes": []}}])
def test_empty_overlays_change_nothing(overlay):  # test_pod_template_override_empty
    base = _containers({"name": "user", "image": "x"})
    base["spec"]["volumes"] = [{"name": "v"}]
    assert merge(base, overlay) == base


def test_merge_does_not_mutate_or_alias_its_inputs():
    base = _containers({"name": "user", "env": [{"name": "A", "value": "1"}]})
    overlay = _containers({"name": "user", "env": [{"name": "B", "value": "2"}]}, {"name": "side"})
    base_before, overlay_before = copy.deepcopy(base), copy.deepcopy(overlay)
    result = merge(base, overlay)
    assert (base, overlay) == (base_before, overlay_before)
    result["spec"]["containers"][0]["env"].append("x")
    result["spec"]["containers"][1]["name"] = "changed"
    assert (base, overlay) == (base_before, overlay_before)


# --------------------------------------------------------------------------- $patch

PATCH_CASES = [
    ("delete a key", {"a": {"b": 1, "c": 2}}, {"a": {"b": {"$patch": "delete"}}}, {"a": {"c": 2}}),
    ("delete a missing key is a no-op", {"a": 1}, {"b": {"$patch": "delete"}}, {"a": 1}),
    ("replace a dict", {"a": {"b": 1, "c": 2}}, {"a": {"$patch": "replace", "d": 3}}, {"a": {"d": 3}}),
    (
        "replace cleans nested directives",
        {"a": {"b": 1}},
        {"a": {"$patch": "replace", "x": {"y": {"$patch": "delete"}, "z": 1}}},
        {"a": {"x": {"z": 1}}},
    ),
    ("explicit merge is the default", {"a": {"b": 1}}, {"a": {"$patch": "merge", "c": 2}}, {"a": {"b": 1, "c": 2}}),
    (
        "delete a named list item",
        {"l": [{"name": "a"}, {"name": "b"}]},
        {"l": [{"name": "a", "$patch": "delete"}]},
        {"l": [{"name": "b"}]},
    ),
    (
        "delete an unknown named item is a no-op",
        {"l": [{"name": "a"}]},
        {"l": [{"name": "x", "$patch": "delete"}]},
        {"l": [{"name": "a"}]},
    ),
    (
        "replace a named list item",
        {"l": [{"name": "a", "v": 1, "w": 2}]},
        {"l": [{"name": "a", "$patch": "replace", "v": 9}]},
        {"l": [{"name": "a", "v": 9}]},
    ),
    ("replace a whole list", {"l": [1, 2, {"name": "a"}]}, {"l": [{"$patch": "replace"}, 3]}, {"l": [3]}),
    ("clear a list", {"tolerations": [{"key": "k"}]}, {"tolerations": [{"$patch": "replace"}]}, {"tolerations": []}),
    (
        "delete then re-add a name in one overlay",
        {"l": [{"name": "a", "v": 1}]},
        {"l": [{"name": "a", "$patch": "delete"}, {"name": "a", "v": 2}]},
        {"l": [{"name": "a", "v": 2}]},
    ),
    ("top-level replace", {"a": 1}, {"$patch": "replace", "b": 2}, {"b": 2}),
    (
        "directives in appended items are consumed",
        {"l": []},
        {"l": [{"name": "n", "x": {"$patch": "delete"}}]},
        {"l": [{"name": "n"}]},
    ),
]


@pytest.mark.parametrize(("case", "base", "overlay", "expected"), PATCH_CASES, ids=[c[0] for c in PATCH_CASES])
def test_patch_directive(case, base, overlay, expected):
    assert merge(base, overlay) == expected


PATCH_ERRORS = [
    ({"a": {"$patch": "remove"}}, "a.$patch", "unknown $patch directive"),
    ({"a": {"$patch": "delete", "b": 1}}, "a", "takes no other keys"),
    ({"l": [{"$patch": "delete"}]}, "l[0]", 'needs a "name"'),
    ({"l": [{"name": "a", "$patch": "delete", "v": 1}]}, "l[0]", 'takes only "name"'),
    ({"l": [{"name": "a"}, {"$patch": "replace"}]}, "l[1]", "must be the first item"),
    ({"l": [{"$patch": "replace", "x": 1}]}, "l[0]", "takes no other keys"),
]


@pytest.mark.parametrize(("overlay", "field", "reason"), PATCH_ERRORS)
def test_malformed_directives_name_the_path(overlay, field, reason):
    with pytest.raises(MergeError) as caught:
        merge({"a": {}, "l": [{"name": "a"}]}, overlay)
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_directives_off_keep_patch_as_data():
    value, _ = merge_traced({"a": {"b": 1}}, None, {"a": {"$patch": "delete"}}, None, directives=False)
    assert value == {"a": {"b": 1, "$patch": "delete"}}


# --------------------------------------------------------------------------- merge_templates + provenance


def test_merge_templates_records_the_last_template_setting_each_leaf():
    merged = merge_templates(
        [
            ("ctrl", _containers({"name": "osmo-ctrl", "image": "ctrl:1", "resources": {"limits": {"cpu": "1"}}})),
            (
                "user",
                _containers({"name": "{{USER_CONTAINER_NAME}}", "resources": {"limits": {"cpu": "{{USER_CPU}}"}}}),
            ),
            ("big-ctrl", _containers({"name": "osmo-ctrl", "resources": {"limits": {"cpu": "4"}}})),
        ]
    )
    assert merged.body["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "4"
    assert merged.sources == {
        "spec.containers[0].name": "big-ctrl",
        "spec.containers[0].image": "ctrl",
        "spec.containers[0].resources.limits.cpu": "big-ctrl",
        "spec.containers[1].name": "user",
        "spec.containers[1].resources.limits.cpu": "user",
    }


def test_merge_templates_sources_quote_keys_with_dots_and_slashes():
    merged = merge_templates([("gpu", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "H100"}}})])
    assert merged.sources == {'spec.nodeSelector["nvidia.com/gpu.product"]': "gpu"}


def test_merge_templates_deleted_and_replaced_leaves_leave_provenance():
    merged = merge_templates(
        [
            ("a", {"spec": {"tolerations": [{"key": "x"}], "hostIPC": True}}),
            ("b", {"spec": {"tolerations": [{"$patch": "replace"}, {"key": "y"}], "hostIPC": {"$patch": "delete"}}}),
        ]
    )
    assert merged.body == {"spec": {"tolerations": [{"key": "y"}]}}
    assert merged.sources == {"spec.tolerations[0].key": "b"}


def test_merge_templates_origin_tree_roundtrips_through_sources():
    merged = merge_templates([("a", {"x": {"y": [1, {"z": 2}]}}), ("b", {"x": {"y": [3]}})])
    assert merged.origin_tree() == {"x": {"y": ["a", {"z": "a"}, "b"]}}


@pytest.mark.parametrize(
    ("templates", "field"),
    [
        ([("bad", ["not", "a", "dict"])], "pod_template[bad]"),
        ([("ok", {}), ("broken", {"spec": {"$patch": "nope"}})], "pod_template[broken].spec.$patch"),
    ],
)
def test_merge_templates_errors_name_the_template(templates, field):
    with pytest.raises(EngineError) as caught:
        merge_templates(templates)
    assert caught.value.field == field


def test_merge_traced_reports_overridden_leaves():
    overrides = []
    merge_traced({"a": 1, "b": 2, "c": 3}, "task", {"a": 10, "b": 2, "d": 4}, "tpl", overrides)
    assert [(o.path, o.base_origin, o.overlay_origin) for o in overrides] == [("a", "task", "tpl")]


# --------------------------------------------------------------------------- properties
# Keys decide the kind of their value, so the three inputs never disagree about a path's type (a scalar
# between two dicts erases the left dict, which makes any "dicts merge, scalars replace" merge non-associative).

_scalars = st.one_of(st.integers(-3, 3), st.booleans(), st.none(), st.sampled_from(["a", "b", "--name"]))
_names = st.sampled_from(["x", "y", "z"])


def _named_item(children):
    return st.fixed_dictionaries({"name": _names}, optional={"v": _scalars, "d": children, "tags": st.lists(_scalars)})


_documents = st.recursive(
    st.fixed_dictionaries({}, optional={"s": _scalars, "t": _scalars}),
    lambda children: st.fixed_dictionaries(
        {},
        optional={
            "s": _scalars,
            "d": children,
            "e": children,
            "items": st.lists(st.one_of(_named_item(children), st.fixed_dictionaries({"v": _scalars}))),
            "tags": st.lists(_scalars, max_size=3),
        },
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_documents)
def test_property_empty_overlay_and_empty_base_are_identities(document):
    assert merge(document, {}) == document
    assert merge({}, document) == document


@settings(max_examples=400, deadline=None)
@given(_documents, _documents, _documents)
def test_property_merge_is_associative(a, b, c):
    assert merge(merge(a, b), c) == merge(a, merge(b, c))


@settings(max_examples=200, deadline=None)
@given(_documents, _documents)
def test_property_merge_never_mutates(a, b):
    a_before, b_before = copy.deepcopy(a), copy.deepcopy(b)
    merge(a, b)
    assert (a, b) == (a_before, b_before)


@settings(max_examples=200, deadline=None)
@given(_documents, _documents)
def test_property_sources_name_a_template_for_every_leaf(a, b):
    merged = merge_templates([("a", a), ("b", b)])
    leaves = {path for path, _, _ in iter_leaves(merged.body) if path}
    assert set(merged.sources) == leaves
    assert set(merged.sources.values()) <= {"a", "b"}
    for path, value, _ in iter_leaves(b):  # a scalar b sets outside any list is b's in the result
        if path and "[" not in path and not isinstance(value, (dict, list)):
            assert merged.sources[path] == "b"
