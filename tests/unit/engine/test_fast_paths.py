"""Issue #17's fast paths against straightforward reference paths, on random inputs.

- the config-save merge (shares subtrees of a `$patch`-free template copy) against chaining the plain
  `merge_traced` from an empty dict, which walks and rebuilds every node;
- provenance built on first read against one built eagerly with the generator `iter_leaves`, through whole
  resolutions of platforms compiled from either merge;
- the cached name and quantity checks of the semantic Pod checks against cold caches and the parser itself;
- Pod validation by remembered-valid parts against validating the whole pod.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine import TaskInput, WorkflowContext, resolve, schema
from pools.engine.errors import EngineError
from pools.engine.merge import MergedTemplate, merge_templates, merge_templates_traced, merge_traced, template_sources
from pools.engine.platform import SYSTEM, CompiledPlatform, Origin, compile_platform
from pools.engine.quantity import QuantityError, parse_quantity
from pools.engine.schema import _checker_for, validate_pod
from pools.engine.schema_checks import _quantity_value, semantic_violations
from portal.json_paths import iter_leaves, leaf_origins

from .conftest import osmo_config
from .test_schema import JSON_VALUES, LOCATIONS, typical_pod

# --------------------------------------------------------------------------- merge at config save

_scalars = st.one_of(st.integers(-3, 3), st.booleans(), st.none(), st.sampled_from(["a", "b", "$patch", "name"]))
_keys = st.sampled_from(["a", "b", "name", "items", "spec"])
_patch = st.sampled_from([{"$patch": "delete"}, {"$patch": "replace", "a": 1}, {"$patch": "bogus"}])


def _documents(with_patches: bool):
    def extend(children):
        item = st.one_of(
            st.fixed_dictionaries({"name": st.sampled_from(["x", "y"])}, optional={"a": children, "b": _scalars}),
            children,
            _scalars,
        )
        if with_patches:
            item = st.one_of(item, st.just({"name": "x", "$patch": "delete"}), st.just({"$patch": "replace"}))
        return st.one_of(st.lists(item, max_size=4), st.dictionaries(_keys, children, max_size=4))

    leaves = st.one_of(_scalars, _patch) if with_patches else _scalars
    return st.dictionaries(_keys, st.recursive(leaves, extend, max_leaves=14), max_size=4)


def _reference_merge(ordered):
    """The plain path: every template walked node by node from an empty dict (no sharing)."""
    body, origins = {}, None
    for name, template in ordered:
        try:
            body, origins = merge_traced(body, origins, template, name)
        except EngineError as error:
            raise error.at(f"pod_template[{name}]") from None
    return body, origins


def _outcome(merge, ordered):
    try:
        body, origins = merge(ordered)
    except EngineError as error:
        return ("error", error.field, error.reason)
    return ("ok", body, template_sources(body, origins), leaf_origins(body, origins))


def _containers(value):
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_documents(False), _documents(True)), min_size=1, max_size=4))
def test_property_config_save_merge_equals_the_plain_merge(documents):
    ordered = [(f"t{index}", document) for index, document in enumerate(documents)]
    before = copy.deepcopy(ordered)
    fast = _outcome(merge_templates_traced, ordered)
    assert fast == _outcome(_reference_merge, copy.deepcopy(ordered))
    assert ordered == before  # inputs untouched
    if fast[0] == "ok":  # and the result shares no dict or list with them
        inputs = {id(c) for _, document in ordered for c in _containers(document)}
        assert not inputs & {id(c) for c in _containers(fast[1])}


@settings(max_examples=200, deadline=None)
@given(st.lists(_documents(False), min_size=1, max_size=4))
def test_property_lazy_sources_equal_eager_sources(documents):
    ordered = [(f"t{index}", document) for index, document in enumerate(documents)]
    body, origins = _reference_merge(ordered)
    eager = MergedTemplate(body, {path: label for path, _, label in iter_leaves(body, origins) if path})
    lazy = merge_templates(ordered)
    assert lazy == eager
    assert lazy.sources == eager.sources and lazy.origin_tree() == eager.origin_tree()


# --------------------------------------------------------------------------- provenance through resolve

_label_values = st.sampled_from(["vision", "{{USER_CPU}}", "{{WF_ID}}", "x-{{USER_MEMORY}}", ""])
_extra_templates = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "metadata": st.fixed_dictionaries(
                {}, optional={"labels": st.dictionaries(st.sampled_from(["team", "tier"]), _label_values, max_size=2)}
            ),
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "nodeSelector": st.dictionaries(st.sampled_from(["zone", "gpu"]), _label_values, max_size=2),
                    "containers": st.lists(
                        st.fixed_dictionaries(
                            {"name": st.sampled_from(["{{USER_CONTAINER_NAME}}", "osmo-ctrl", "sidecar"])},
                            optional={
                                "image": st.just("registry.example/side:1"),
                                "env": st.lists(
                                    st.fixed_dictionaries(
                                        {"name": st.sampled_from(["A", "B"]), "value": _label_values}
                                    ),
                                    max_size=2,
                                ),
                            },
                        ),
                        max_size=2,
                    ),
                },
            ),
        },
    ),
    max_size=3,
)
_tasks = st.builds(
    TaskInput,
    name=st.sampled_from(["train", "eval-1"]),
    environment=st.dictionaries(st.sampled_from(["A", "EPOCHS"]), st.sampled_from(["1", "x"]), max_size=2),
    resources=st.fixed_dictionaries({}, optional={"cpu": st.integers(1, 8), "memory": st.sampled_from(["1Gi", "4Gi"])}),
    command=st.sampled_from([[], ["true"]]),
)


def _reference_provenance(resolution) -> dict:
    """Eager and plain: one description per leaf, walked with the generator iter_leaves."""
    out = {}
    layers = resolution.variables
    for path, _, origin in iter_leaves(resolution.pod, resolution.origins):
        origin = origin if isinstance(origin, Origin) else SYSTEM
        if origin.setting:  # a value the system took from a setting (the control image)
            out[path] = {"source": origin.source, "setting": origin.setting}
        elif origin.source != "template":
            out[path] = {"source": origin.source}
        else:
            used = [{"name": n, "layer": layers[n]["layer"] if n in layers else "undefined"} for n in origin.variables]
            out[path] = {"source": "template", "template": origin.template, "variables": used}
    return out


def _reference_platform(config) -> CompiledPlatform:
    compiled = compile_platform(config)
    body, origins = _reference_merge(config.templates)
    return CompiledPlatform(config, MergedTemplate(body, origins=origins), origins=origins, warnings=compiled.warnings)


@settings(max_examples=150, deadline=None)
@given(_extra_templates, _tasks)
def test_property_fast_resolution_equals_the_reference(extra, task):
    config = osmo_config(extra_templates=[(f"extra{i}", t) for i, t in enumerate(extra)])
    try:
        fast_platform = compile_platform(config)
    except EngineError:
        return  # a template the config check refuses: nothing to resolve
    reference_platform = _reference_platform(config)
    ctx = WorkflowContext(workflow_id="wf-7")
    outcomes = []
    for platform in (fast_platform, reference_platform):
        try:
            resolution = resolve(platform, copy.deepcopy(task), ctx)
        except EngineError as error:
            outcomes.append(("error", error.field, error.reason))
            continue
        assert resolution.provenance == _reference_provenance(resolution)
        outcomes.append(("ok", resolution.to_dict()))
    assert outcomes[0] == outcomes[1]


# --------------------------------------------------------------------------- cached semantic checks

_raw_quantities = st.one_of(
    st.sampled_from([1, 1.0, True, False, 0, "1", "1.0", "1.5", "-1", "500m", "1Gi", "abc", "", 1.5, -2, "1e3"]),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=True, width=32),
)
_resource_names = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "bad name", "a/b/c", "x"])
_label_keys = st.sampled_from(["team", "pool-portal/pool", "-bad", "a/b/c", "example.com/x", "X" * 70])


@settings(max_examples=400, deadline=None)
@given(_raw_quantities)
def test_property_cached_quantity_equals_the_parser(raw):
    try:
        expected = parse_quantity(raw).value
    except QuantityError as error:
        found = _quantity_value(raw)
        assert isinstance(found, QuantityError) and found.reason == error.reason
    else:
        assert _quantity_value(raw) == expected


def _pod(requests, limits, labels):
    container = {"name": "main", "image": "busybox", "resources": {"requests": requests, "limits": limits}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": labels},
        "spec": {"containers": [container]},
    }


def _cold(pod):
    from pools.engine import schema_checks

    for cached in (
        schema_checks.dns1123_label_error,
        schema_checks.dns1123_subdomain_error,
        schema_checks.label_value_error,
        schema_checks.port_name_error,
        schema_checks.qualified_name_error,
        schema_checks._label_key_error,
        schema_checks._quantity_text,
        schema_checks._resource_name_error,
        schema_checks._is_extended,
    ):
        cached.cache_clear()
    return semantic_violations(pod)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_resource_names, _raw_quantities, max_size=3),
    st.dictionaries(_resource_names, _raw_quantities, max_size=3),
    st.dictionaries(_label_keys, st.sampled_from(["ok", "-no", "", "Y" * 70, 3]), max_size=3),
)
def test_property_cached_semantic_checks_equal_cold_ones(requests, limits, labels):
    pod = _pod(requests, limits, labels)
    warm = semantic_violations(pod)  # caches filled by earlier examples (1, 1.0 and True hash alike)
    assert warm == _cold(pod)


# --------------------------------------------------------------------------- Pod validation by parts


def _reference_validation(pod) -> list:
    """The whole-pod path: the schema over the whole manifest, then every semantic check."""
    checker = _checker_for((1, 33))
    found = [] if checker.is_valid(pod) else checker.violations(pod)
    found.extend(semantic_violations(pod))
    return list(dict.fromkeys(found))


def _with_second_container(pod, copy_main: bool):
    containers = pod["spec"]["containers"]
    second = copy.deepcopy(containers[0]) if copy_main else {"name": "side", "image": "busybox"}
    if copy_main:
        second["name"] = "main-2"
    containers.append(second)
    return pod


@settings(max_examples=500, deadline=None)
@given(
    location=st.sampled_from(LOCATIONS),
    value=JSON_VALUES,
    add_key=st.booleans(),
    second=st.sampled_from([None, True, False]),
    cold=st.booleans(),
)
def test_property_validation_by_parts_equals_the_whole_pod_path(location, value, add_key, second, cold):
    pod = typical_pod()
    if second is not None:
        _with_second_container(pod, second)
    assert validate_pod(copy.deepcopy(pod)) == []  # the unchanged parts are now remembered as valid
    target = pod
    for part in location[:-1]:
        target = target[part]
    if add_key and isinstance(target[location[-1]], dict):
        target[location[-1]]["name"] = value
    else:
        target[location[-1]] = value
    if cold:
        schema._VALID_PARTS.clear()
    assert validate_pod(pod) == _reference_validation(pod)
    assert validate_pod(pod) == _reference_validation(pod)  # and again, with what it remembered


class _Odd(dict):
    """A mapping marshal cannot write: the memo falls back to repr for it."""


@settings(max_examples=200, deadline=None)
@given(
    location=st.sampled_from(LOCATIONS),
    value=st.one_of(JSON_VALUES, st.just(_Odd(name="x")), st.just((1, "a")), st.just(object())),
    first=st.sampled_from([1, 1.0, True, "1", None]),
)
def test_property_remembered_parts_tell_apart_what_validation_tells_apart(location, value, first):
    """A part remembered valid with one value (1) is not taken for one that differs only in type (1.0, True,
    "1"), and values marshal cannot encode are keyed too; the verdict is always the whole-pod one."""
    pod = typical_pod()
    target = pod
    for part in location[:-1]:
        target = target[part]
    target[location[-1]] = first
    assert validate_pod(copy.deepcopy(pod)) == _reference_validation(pod)
    target[location[-1]] = value
    assert validate_pod(pod) == _reference_validation(pod)
    assert validate_pod(pod) == _reference_validation(pod)


# --------------------------------------------------------------------------- leaf paths under an origin tree

_any_keys = st.one_of(
    st.sampled_from(["a", "name", "x.y", "with space", "ünï", "", "[0]", "$patch"]), st.integers(0, 2)
)
_bodies = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_any_keys, inner, max_size=3), max_leaves=12
)


def _origin_for(draw, body, depth=0):
    """An origin tree for `body`: a label anywhere, a mirroring tree, or a mismatched one."""
    kind = draw(st.sampled_from(["label", "tree", "mismatch"]))
    if kind == "label" or not isinstance(body, (dict, list)) or depth > 4:
        return draw(st.sampled_from(["t0", "t1", None]))
    if kind == "mismatch":
        return {} if isinstance(body, list) else []
    if isinstance(body, dict):
        return {key: _origin_for(draw, child, depth + 1) for key, child in body.items()}
    return [_origin_for(draw, child, depth + 1) for child in body]


@st.composite
def _bodies_with_origins(draw):
    body = draw(_bodies)
    return body, _origin_for(draw, body)


@settings(max_examples=400, deadline=None)
@given(_bodies_with_origins())
def test_property_leaf_origins_equal_the_generator(body_and_origin):
    body, origin = body_and_origin
    assert leaf_origins(body, origin) == {path: label for path, _, label in iter_leaves(body, origin)}
