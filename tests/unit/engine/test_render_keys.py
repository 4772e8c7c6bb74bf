"""Render keys: the schema check keys a container the merge took unchanged from the rendered template by what
rendered it (the template, the container's index, the values of the variables it reads) instead of
serializing it. The verdict must always be the whole-pod one, whatever the values and their order."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine import TaskInput, WorkflowContext, resolve
from pools.engine.errors import EngineError
from pools.engine.platform import compile_platform
from pools.engine.variables import CompiledTemplate

from .conftest import osmo_config
from .test_fast_paths import _reference_validation
from .test_schema import JSON_VALUES

_SIDECARS = 7  # with the task's and the control container: past the size where resolve keys by render


def _sidecar(index: int) -> dict:
    return {
        "name": f"side-{index}",
        "image": "registry.example/side:{{SIDE_TAG}}",
        "imagePullPolicy": "{{SIDE_POLICY}}",
        "ports": [{"containerPort": "{{SIDE_PORT}}"}],
        "resources": {"limits": {"cpu": "{{SIDE_CPU}}"}},
        "env": [{"name": "TEAM", "value": "{{TEAM}}"}],
    }


def _platform():
    sidecars = {"spec": {"containers": [_sidecar(i) for i in range(_SIDECARS)] + [{"name": "plain", "image": "x"}]}}
    config = osmo_config(extra_templates=[("sidecars", sidecars)])
    config.pool_variables.update(SIDE_TAG="1", SIDE_POLICY="Always", SIDE_PORT=8080, SIDE_CPU="1", TEAM="vision")
    return compile_platform(config)


def _task(**variables) -> TaskInput:
    return TaskInput(name="train", image="nvcr.io/nvidia/pytorch:24.01-py3", variables=variables)


def _schema_of(platform, task):
    resolution = resolve(platform, task, WorkflowContext(workflow_id="wf-1"))
    return resolution.validation["schema"], resolution.pod


def test_a_value_that_makes_the_rendered_sidecars_invalid_is_reported_after_a_valid_one():
    platform = _platform()
    assert _schema_of(platform, _task())[0] == []
    schema, pod = _schema_of(platform, _task(SIDE_CPU="lots"))
    paths = {violation["path"] for violation in schema}
    assert len(pod["spec"]["containers"]) == _SIDECARS + 3
    assert {f"spec.containers[{i}].resources.limits.cpu" for i in range(2, 2 + _SIDECARS)} <= paths
    assert schema == [v.as_dict() for v in _reference_validation(pod)]
    assert _schema_of(platform, _task())[0] == []  # valid again with the first value


def test_keys_follow_the_variables_a_container_reads_and_only_unmerged_containers_have_one():
    template = CompiledTemplate(
        {"spec": {"containers": [{"name": "a", "image": "{{TAG}}"}, {"name": "b", "image": "fixed"}]}}
    )
    values = {"TAG": "1", "OTHER": "x"}
    rendered = template.render(values)
    containers = rendered["spec"]["containers"]
    keys = template.container_keys(rendered, containers, values)
    again = template.render(dict(values, OTHER="y"))
    assert template.container_keys(again, again["spec"]["containers"], dict(values, OTHER="y")) == keys
    changed = template.render(dict(values, TAG="2"))
    changed_keys = template.container_keys(changed, changed["spec"]["containers"], dict(values, TAG="2"))
    assert changed_keys[0] != keys[0] and changed_keys[1] == keys[1]  # only "a" reads TAG
    typed = template.render(dict(values, TAG=1))  # 1 renders like "1" here, but is a different value
    assert template.container_keys(typed, typed["spec"]["containers"], dict(values, TAG=1))[0] != keys[0]
    copied = [copy.deepcopy(containers[0]), containers[1]]  # equal, but not the rendered object: no key
    assert template.container_keys(rendered, copied, values) == [None, keys[1]]
    assert template.container_keys(rendered, [containers[1], containers[0]], values) == [keys[1], keys[0]]
    other = CompiledTemplate({"spec": {"containers": [{"name": "b", "image": "fixed"}]}})
    assert other.container_keys(other.render({}), other.render({})["spec"]["containers"], {}) == [None]
    fresh = other.render({})
    assert other.container_keys(fresh, fresh["spec"]["containers"], {})[0] not in keys  # per template


def test_values_marshal_cannot_write_give_no_keys():
    template = CompiledTemplate({"spec": {"containers": [{"name": "a", "image": "{{TAG}}"}]}})
    rendered = template.render({"TAG": "1"})
    assert template.container_keys(rendered, rendered["spec"]["containers"], {"TAG": object()}) is None


_VARIABLES = st.fixed_dictionaries(
    {}, optional={name: JSON_VALUES for name in ("SIDE_TAG", "SIDE_POLICY", "SIDE_PORT", "SIDE_CPU", "TEAM")}
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_VARIABLES, min_size=1, max_size=4))
def test_property_keyed_validation_equals_the_whole_pod_path(assignments):
    """The same compiled platform resolves tasks in turn (what it remembered from earlier ones in play); each
    verdict equals validating the whole pod afresh."""
    platform = _platform()
    for variables in assignments:
        try:
            schema, pod = _schema_of(platform, _task(**variables))
        except EngineError:
            continue  # a value a variable may not take: refused before any pod exists
        assert schema == [violation.as_dict() for violation in _reference_validation(pod)]
