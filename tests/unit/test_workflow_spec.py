"""workflows.spec: the OSMO v2 workflow spec (osmo-reference §5.1, conformance cases §7)."""

from __future__ import annotations

import copy
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from pools.engine import EngineError, PlatformConfig, WorkflowContext, compile_platform, resolve
from pools.engine.defaults import OSMO_DEFAULT_VARIABLES
from workflows.spec import (
    GroupSpec,
    ResourceSpec,
    SpecError,
    TaskSpec,
    WorkflowSpec,
    effective_timeouts,
    parse_workflow,
    substitute_tokens,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "workflows"


def task(**fields) -> dict:
    return {"name": "train", "image": "nvcr.io/nvidia/pytorch:24.01-py3", "command": ["python"], **fields}


def spec(*, tasks=None, version=2, **workflow) -> dict:
    body = {"name": "wf", "resources": {"default": {"cpu": 1}}, **workflow}
    if "groups" not in workflow:
        body["tasks"] = tasks if tasks is not None else [task()]
    return {"version": version, "workflow": body}


def with_task(**fields) -> dict:
    return spec(tasks=[task(**fields)])


def refused(document, *, field: str, reason: str = "", **kwargs) -> SpecError:
    with pytest.raises(SpecError) as caught:
        parse_workflow(document, **kwargs)
    assert caught.value.field == field, str(caught.value)
    assert reason in caught.value.reason, str(caught.value)
    return caught.value


# ----------------------------------------------------------------------------------------------- a whole spec

FULL = """
version: 2
workflow:
  name: train-resnet
  labels: {team: vision, example.com/tier: gold, run: 3}
  timeout: {exec_timeout: 8h, queue_timeout: PT6H}
  resources:
    default: {cpu: 500m, gpu: 0, memory: 2Gi}
    gpu: {cpu: 8, gpu: 2, memory: 64Gi, storage: 100Gi, platform: a100, nodesExcluded: [node-7]}
  groups:
  - name: trainers
    ignoreNonleadStatus: false
    tasks:
    - name: Leader_0
      lead: true
      image: nvcr.io/nvidia/pytorch:24.01-py3
      command: [torchrun]
      args: [--nnodes, 2, train.py]
      environment: {EPOCHS: 10, DEBUG: true, RUN: "{{workflow_id}}"}
      resource: gpu
      privileged: true
      hostNetwork: true
      volumeMounts: [/data, "/scratch:/mnt/scratch"]
      exitActions: {complete: "0", RESCHEDULE: "1-10,16"}
    - name: worker-1
      image: nvcr.io/nvidia/pytorch:24.01-py3
      command: [torchrun]
      resource: gpu
  - name: report
    barrier: false
    tasks:
    - {name: summarize, image: "python:3.12", command: [python, summarize.py]}
"""


def test_a_complete_spec_is_normalized():
    parsed = parse_workflow(FULL, source="full.yaml")
    assert parsed.name == "train-resnet"
    assert parsed.labels == {"team": "vision", "example.com/tier": "gold", "run": "3"}
    assert (parsed.exec_timeout, parsed.queue_timeout) == (timedelta(hours=8), timedelta(hours=6))
    assert parsed.resources == {
        "default": ResourceSpec("default", cpu="500m", gpu=0, memory="2Gi"),
        "gpu": ResourceSpec("gpu", cpu=8, gpu=2, memory="64Gi", storage="100Gi", platform="a100",
                            nodes_excluded=["node-7"]),
    }
    trainers, report = parsed.groups
    assert (trainers.name, trainers.barrier, trainers.ignore_non_lead_status) == ("trainers", True, False)
    assert (report.name, report.barrier, report.ignore_non_lead_status) == ("report", False, True)
    leader, worker = trainers.tasks
    assert leader == TaskSpec(
        name="Leader_0", image="nvcr.io/nvidia/pytorch:24.01-py3", command=["torchrun"],
        args=["--nnodes", "2", "train.py"], environment={"EPOCHS": "10", "DEBUG": "true", "RUN": "{{workflow_id}}"},
        resource="gpu", privileged=True, host_network=True, volume_mounts=["/data", "/scratch:/mnt/scratch"],
        exit_actions={"COMPLETE": "0", "RESCHEDULE": "1-10,16"}, lead=True, group="trainers")
    assert leader.path == "groups[0].tasks[0]"
    assert (worker.lead, worker.group, worker.resource, worker.args, worker.environment) == (
        False, "trainers", "gpu", [], {})
    assert report.tasks[0].lead is True  # a group of one leads itself
    assert [t.name for t in parsed.tasks()] == ["Leader_0", "worker-1", "summarize"]
    assert parsed.warnings == []
    assert parsed.document == yaml.safe_load(FULL)


def test_json_text_and_dicts_parse_the_same():
    document = yaml.safe_load(FULL)
    from_json = parse_workflow(json.dumps(document), source="full.json")
    from_dict = parse_workflow(document)
    from_yaml = parse_workflow(FULL)
    assert from_json == from_dict == from_yaml


def test_the_input_dict_is_not_modified():
    document = spec(tasks=[task(environment={"A": 1})])
    before = copy.deepcopy(document)
    parsed = parse_workflow(document)
    assert document == before
    parsed.document["workflow"]["name"] = "changed"
    assert document["workflow"]["name"] == "wf"


def test_the_stored_document_is_json_even_when_yaml_is_not():
    text = ("version: 2\nworkflow:\n  name: wf\n  resources: {default: {}}\n  tasks:\n  - name: a\n    image: i\n"
            "    command: [c]\n    inputs: [{when: 2024-01-01, 3: x}]\n")
    parsed = parse_workflow(text)
    assert parsed.document["workflow"]["tasks"][0]["inputs"] == [{"when": "2024-01-01", "3": "x"}]
    json.dumps(parsed.document, allow_nan=False)
    timed = parse_workflow(spec(timeout={"exec_timeout": timedelta(hours=1)}))
    assert timed.document["workflow"]["timeout"] == {"exec_timeout": "1:00:00"}


def test_spec_error_is_an_engine_error_with_path_value_and_reason():
    error = refused(with_task(image=""), field="tasks[0].image", reason="is required")
    assert isinstance(error, EngineError)
    assert error.as_dict() == {"field": "tasks[0].image", "value": "", "reason": error.reason}
    assert str(error).startswith("tasks[0].image: ")


# ----------------------------------------------------------------------------------------------- version


@pytest.mark.parametrize("version", [2, "2", 2.0, " 2 "])
def test_version_2_in_any_spelling(version):
    assert parse_workflow(spec(version=version)).warnings == []


@pytest.mark.parametrize("version", [3, "1", 2.5, True, False, "abc", "2.0", [2], None])
def test_other_versions_are_refused(version):
    refused(spec(version=version), field="version", reason="Unsupported workflow version")


def test_missing_version_assumes_2_with_a_warning():
    document = spec()
    del document["version"]
    assert parse_workflow(document).warnings == ["version missing: assuming version 2"]


# ----------------------------------------------------------------------------------------------- document shape


@pytest.mark.parametrize(("document", "field", "reason"), [
    ([1, 2], "", "a workflow spec is a mapping"),
    ({"version": 2}, "workflow", "is required"),
    ({"version": 2, "workflow": "train"}, "workflow", "is required"),
    ({"version": 2, "workflow": {"name": "a"}, "extra": 1}, "extra", "unknown field 'extra'"),
    ({"version": 2, "name": "wf", "tasks": []}, "name", "go under workflow:"),
    (spec(pools="p"), "pools", "unknown field 'pools'"),
])
def test_document_shape(document, field, reason):
    refused(document, field=field, reason=reason)


def test_pool_backend_and_default_values_are_ignored_with_warnings():
    document = spec(pool="other-pool", backend="cluster-b")
    document["default-values"] = {"x": 1}
    assert parse_workflow(document).warnings == [
        "default-values ignored: Jinja templating of specs is not supported; {{...}} stays literal text",
        "pool ignored: the pool in the submission URL decides",
        "backend ignored: the pool in the submission URL decides",
    ]


@pytest.mark.parametrize(("text", "where"), [
    ("version: 2\nworkflow:\n  name: wf\n  tasks:\n  - name: a\n    image: [\n", r"bad\.yaml:7:1"),
    ("version: 2\nworkflow:\n  name: wf\n   tasks: []\n", r"bad\.yaml:4:\d+"),
    ("workflow:\n\tname: wf\n", r"bad\.yaml:2:1"),
])
def test_malformed_yaml_names_file_line_and_column(text, where):
    with pytest.raises(SpecError) as caught:
        parse_workflow(text, source="bad.yaml")
    assert re.match(rf"{where}: invalid YAML", str(caught.value)), str(caught.value)


def test_malformed_json_names_file_line_and_column():
    with pytest.raises(SpecError) as caught:
        parse_workflow('{"version": 2,\n "workflow": {"name": "wf",}}', source="spec.json")
    assert re.match(r"spec\.json:2:\d+: invalid JSON", str(caught.value)), str(caught.value)


def test_empty_text_is_refused():
    with pytest.raises(SpecError, match="empty"):
        parse_workflow("  \n", source="empty.yaml")


# ----------------------------------------------------------------------------------------------- workflow name, labels


@pytest.mark.parametrize("name", ["a", "train-1", "x" * 40, "9lives"])
def test_valid_workflow_names(name):
    assert parse_workflow(spec(name=name)).name == name


@pytest.mark.parametrize(("name", "reason"), [
    (None, "is required"), ("", "is required"), (12, "is required"),
    ("Train", "DNS-1123 label"), ("my_wf", "for example 'my-wf'"), ("-a", "DNS-1123"), ("a-", "DNS-1123"),
    ("a.b", "DNS-1123"), ("x" * 41, "at most 40 characters"),
])
def test_invalid_workflow_names(name, reason):
    refused(spec(name=name), field="name", reason=reason)


def test_labels_are_validated_and_stringified():
    parsed = parse_workflow(spec(labels={"team": "vision", "example.com/tier": "gold", "n": 3, "on": True,
                                         "empty": ""}))
    assert parsed.labels == {"team": "vision", "example.com/tier": "gold", "n": "3", "on": "true", "empty": ""}


@pytest.mark.parametrize(("labels", "field", "reason"), [
    ({"bad key": "x"}, 'labels["bad key"]', "label key name part"),
    ({"a/b/c": "x"}, 'labels["a/b/c"]', "qualified name"),
    ({"Example.COM/x": "x"}, 'labels["Example.COM/x"]', "prefix part"),
    ({"team": "has space"}, "labels.team", "label value"),
    ({"team": "-x"}, "labels.team", "label value"),
    ({"team": "x" * 64}, "labels.team", "no more than 63"),
    ({"team": ["a"]}, "labels.team", "is a string"),
    ({"pool-portal/workflow": "x"}, 'labels["pool-portal/workflow"]', "set by the system"),
    ({f"k{i}": "v" for i in range(17)}, "labels", "at most 16"),
    (["team"], "labels", "mapping"),
])
def test_invalid_labels(labels, field, reason):
    refused(spec(labels=labels), field=field, reason=reason)


def test_sixteen_labels_are_allowed():
    assert len(parse_workflow(spec(labels={f"k{i}": "v" for i in range(16)})).labels) == 16


# ----------------------------------------------------------------------------------------------- timeouts (TimeoutSpec)


@pytest.mark.parametrize(("value", "expected"), [
    (30, timedelta(seconds=30)),  # int seconds
    (1.5, timedelta(seconds=1.5)),  # float seconds
    ("PT1H", timedelta(hours=1)),  # ISO 8601
    ("P1DT6H", timedelta(days=1, hours=6)),
    ("10s", timedelta(seconds=10)),  # short units
    ("2h", timedelta(hours=2)), ("7d", timedelta(days=7)), ("30m", timedelta(minutes=30)),
    ("1500ms", timedelta(seconds=1.5)), ("250us", timedelta(microseconds=250)),
    (timedelta(minutes=5), timedelta(minutes=5)),  # passes through (dict input)
    (None, None),
])
def test_timeout_spec(value, expected):
    parsed = parse_workflow(spec(timeout={"exec_timeout": value, "queue_timeout": value}))
    assert parsed.exec_timeout == expected
    assert parsed.queue_timeout == expected


@pytest.mark.parametrize("value", ["not-a-duration", "1h30m", "2 hours", "2H", 0, -5, "0s", 0.0, -1.5,
                                   float("inf"), True, [1], timedelta(0)])
def test_invalid_timeouts(value):
    refused(spec(timeout={"queue_timeout": value}), field="timeout.queue_timeout")


@pytest.mark.parametrize(("timeout", "field"), [
    ({"exec": "1h"}, "timeout.exec"), ("1h", "timeout"), (["1h"], "timeout"),
])
def test_timeout_shape(timeout, field):
    refused(spec(timeout=timeout), field=field)


# ----------------------------------------------------------------------------------------------- resources


def resource_spec(**fields) -> ResourceSpec:
    return parse_workflow(spec(resources={"default": fields})).resources["default"]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"cpu": 2}, ResourceSpec("default", cpu=2)),
    ({"cpu": 0.5}, ResourceSpec("default", cpu=0.5)),  # fractional (OSMO: whole cores only)
    ({"cpu": "500m"}, ResourceSpec("default", cpu="500m")),  # millicores
    ({"cpu": 0}, ResourceSpec("default", cpu=0)),  # zero, not "unset"
    ({"gpu": 0}, ResourceSpec("default", gpu=0)),
    ({"gpu": 8}, ResourceSpec("default", gpu=8)),
    ({"gpu": "2"}, ResourceSpec("default", gpu=2)),
    ({"gpu": 2.0}, ResourceSpec("default", gpu=2)),
    ({"memory": "10Gi"}, ResourceSpec("default", memory="10Gi")),
    ({"memory": "10.5Gi"}, ResourceSpec("default", memory="10.5Gi")),
    ({"memory": "10Mi", "storage": "1G"}, ResourceSpec("default", memory="10Mi", storage="1G")),
    ({"memory": 1073741824}, ResourceSpec("default", memory="1073741824")),
    ({"storage": " 100Gi "}, ResourceSpec("default", storage="100Gi")),
    ({"platform": "a100"}, ResourceSpec("default", platform="a100")),
    ({"nodesExcluded": ["node-1", "node-2"]}, ResourceSpec("default", nodes_excluded=["node-1", "node-2"])),
    ({}, ResourceSpec("default")),
])
def test_valid_resources(fields, expected):
    assert resource_spec(**fields) == expected


def test_an_empty_resource_entry_means_all_defaults():
    assert parse_workflow(spec(resources={"default": None})).resources == {"default": ResourceSpec("default")}


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("cpu", "abc", "not a Kubernetes quantity"), ("cpu", -1, "negative"), ("cpu", "-500m", "negative"),
    ("cpu", True, "number of cores"), ("cpu", [1], "number of cores"),
    ("gpu", -1, "whole number"), ("gpu", 1.5, "whole number"), ("gpu", "two", "whole number"),
    ("gpu", True, "whole number"), ("gpu", "1.5", "whole number"),
    ("memory", "10A", "not a Kubernetes quantity"), ("memory", "Gi", "not a Kubernetes quantity"),
    ("memory", "-1Gi", "negative"), ("memory", True, "Kubernetes quantity"), ("memory", 1.5, "Kubernetes quantity"),
    ("storage", "10A", "not a Kubernetes quantity"), ("storage", "1 Gi", "not a Kubernetes quantity"),
    ("platform", 3, "non-empty string"), ("platform", "", "non-empty string"),
    ("nodesExcluded", "node-1", "list of strings"), ("nodesExcluded", [1], "must be a string"),
    ("nodesExcluded", [""], "non-empty"),
])
def test_invalid_resource_values_name_path_and_value(key, value, reason):
    item = key == "nodesExcluded" and isinstance(value, list)  # the bad list item is named, not the list
    error = refused(spec(resources={"gpu": {key: value}}, tasks=[task(resource="gpu")]),
                    field=f"resources.gpu.{key}" + ("[0]" if item else ""), reason=reason)
    shown = value[0] if item else value
    assert error.value == shown
    assert f"(value: {shown!r})" in str(error)


@pytest.mark.parametrize(("resources", "field", "reason"), [
    ({"default": {"cpus": 2}}, "resources.default.cpus", "unknown field 'cpus'"),
    ({"default": {"cpu": {"count": 2}}}, "resources.default.cpu", "number of cores"),
    ({"default": "big"}, "resources.default", "must be a mapping"),
    (["default"], "resources", "must be a mapping"),
    ({"": {}}, "resources", "non-empty string"),
])
def test_resource_shape(resources, field, reason):
    refused(spec(resources=resources), field=field, reason=reason)


def test_topology_is_accepted_and_ignored_with_a_warning():
    parsed = parse_workflow(spec(resources={"default": {"cpu": 1, "topology": [{"key": "rack"}]}}))
    assert parsed.resources["default"] == ResourceSpec("default", cpu=1)
    assert parsed.warnings == ["resources.default.topology ignored: topology requirements are not supported yet"]


def test_resource_names_with_dots_are_quoted_in_paths():
    refused(spec(resources={"a.b": {"gpu": -1}}, tasks=[task(resource="a.b")]), field='resources["a.b"].gpu')


# ----------------------------------------------------------------------------------------------- tasks and groups


def test_plain_tasks_become_one_group_each():
    parsed = parse_workflow(spec(tasks=[task(name="prep"), task(name="train")]))
    assert [(g.name, [t.name for t in g.tasks], g.barrier, g.ignore_non_lead_status) for g in parsed.groups] == [
        ("prep-group", ["prep"], True, True), ("train-group", ["train"], True, True)]
    assert all(t.lead for t in parsed.tasks())
    assert [t.group for t in parsed.tasks()] == ["prep-group", "train-group"]
    assert [t.path for t in parsed.tasks()] == ["tasks[0]", "tasks[1]"]


@pytest.mark.parametrize(("workflow", "field", "reason"), [
    ({"tasks": [task()], "groups": [{"name": "g", "tasks": [task()]}]}, "groups", "Cannot use both"),
    ({}, "tasks", "at least one group or one task"),
    ({"tasks": []}, "tasks", "at least one group or one task"),
    ({"groups": []}, "groups", "at least one group or one task"),
    ({"tasks": {"name": "a"}}, "tasks", "non-empty list"),
    ({"groups": [{"name": "g", "tasks": []}]}, "groups[0].tasks", 'Group "g" needs to have at least one task'),
    ({"groups": [{"name": "g"}]}, "groups[0].tasks", "at least one task"),
    ({"groups": [{"tasks": [task()]}]}, "groups[0].name", "a group needs a name"),
    ({"groups": ["g"]}, "groups[0]", "a group is a mapping"),
    ({"groups": [{"name": "g", "tasks": [task()], "lead": "a"}]}, "groups[0].lead", "unknown field 'lead'"),
    ({"groups": [{"name": "g", "barrier": "yes", "tasks": [task()]}]}, "groups[0].barrier", "true or false"),
    ({"groups": [{"name": "g", "tasks": [task(name="a"), task(name="b")]}]}, "groups[0].tasks",
     'Group "g" has 0 leader(s) but must have exactly one'),
    ({"groups": [{"name": "g", "tasks": [task(name="a", lead=True), task(name="b", lead=True)]}]},
     "groups[0].tasks", "has 2 leader(s)"),
    ({"tasks": ["train"]}, "tasks[0]", "a task is a mapping"),
])
def test_tasks_and_groups_shape(workflow, field, reason):
    document = {"version": 2, "workflow": {"name": "wf", "resources": {"default": {}}, **workflow}}
    refused(document, field=field, reason=reason)


def test_error_paths_reach_into_groups():
    groups = [{"name": "a", "tasks": [task(name="one")]},
              {"name": "b", "tasks": [task(name="two", image=None)]}]
    refused(spec(groups=groups), field="groups[1].tasks[0].image", reason="is required")


@pytest.mark.parametrize(("names", "field"), [
    (["Task_1", "task-1"], "tasks[1].name"),  # case-insensitive, '-' ≡ '_'
    (["train", "TRAIN"], "tasks[1].name"),
])
def test_task_names_are_unique(names, field):
    refused(spec(tasks=[task(name=n) for n in names]), field=field, reason="same name as tasks[0]")


@pytest.mark.parametrize(("groups", "field", "reason"), [
    ([{"name": "shared", "tasks": [task(name="shared")]}], "groups[0].tasks[0].name", "same name as groups[0]"),
    ([{"name": "g-1", "tasks": [task(name="a")]}, {"name": "G_1", "tasks": [task(name="b")]}], "groups[1].name",
     "same name as groups[0]"),
    ([{"name": "g1", "tasks": [task(name="a")]}, {"name": "g2", "tasks": [task(name="A")]}],
     "groups[1].tasks[0].name", "same name as groups[0].tasks[0]"),
    ([{"name": "g1", "tasks": [task(name="a")]}, {"name": "a", "tasks": [task(name="b")]}], "groups[1].name",
     "same name as groups[0].tasks[0]"),
])
def test_names_are_unique_across_tasks_and_groups(groups, field, reason):
    refused(spec(groups=groups), field=field, reason=reason)


def test_max_tasks_counts_every_task():
    refused(spec(tasks=[task(name=f"t{i}") for i in range(4)]), max_tasks=3, field="tasks",
            reason="4 tasks; at most 3")
    groups = [{"name": "g1", "tasks": [task(name="a"), task(name="b", lead=True)]},
              {"name": "g2", "tasks": [task(name="c"), task(name="d", lead=True)]}]
    refused(spec(groups=groups), max_tasks=3, field="groups", reason="4 tasks; at most 3")
    assert len(parse_workflow(spec(groups=groups), max_tasks=4).tasks()) == 4


def test_max_tasks_defaults_to_100():
    assert len(parse_workflow(spec(tasks=[task(name=f"t{i}") for i in range(100)])).tasks()) == 100
    refused(spec(tasks=[task(name=f"t{i}") for i in range(101)]), field="tasks", reason="101 tasks")


# ----------------------------------------------------------------------------------------------- task fields


@pytest.mark.parametrize("name", ["a", "Train_Model", "a-b_c1", "x" * 63])
def test_valid_task_names(name):
    assert parse_workflow(with_task(name=name)).tasks()[0].name == name


@pytest.mark.parametrize(("name", "reason"), [
    (None, "needs a name"), ("", "needs a name"), ("1abc", "start with a letter"), ("a b", "only letters"),
    ("a.b", "only letters"), ("-a", "start with a letter"), ("a_", "end with a letter or digit"),
    ("x" * 64, "at most 63"), (7, "needs a name"),
    ("osmo-ctrl", "cannot be named 'osmo-ctrl'"), ("OSMO_CTRL", "cannot be named 'osmo-ctrl'"),
    ("osmo_ctrl", "cannot be named"),
])
def test_invalid_task_names(name, reason):
    refused(with_task(name=name), field="tasks[0].name", reason=reason)


@pytest.mark.parametrize(("fields", "field", "reason"), [
    ({"image": None}, "tasks[0].image", "is required"),
    ({"image": ""}, "tasks[0].image", "is required"),
    ({"image": "py thon"}, "tasks[0].image", "no spaces"),
    ({"image": 3}, "tasks[0].image", "is required"),
    ({"command": None}, "tasks[0].command", "is required"),
    ({"command": []}, "tasks[0].command", "Container train should have at least one command"),
    ({"command": "python train.py"}, "tasks[0].command", "list of strings"),
    ({"command": [True]}, "tasks[0].command[0]", "quote it"),
    ({"command": ["python", {"a": 1}]}, "tasks[0].command[1]", "must be a string"),
    ({"args": "--x"}, "tasks[0].args", "list of strings"),
    ({"args": ["--flag", False]}, "tasks[0].args[1]", "quote it"),
    ({"environment": ["A=1"]}, "tasks[0].environment", "mapping"),
    ({"environment": {"1A": "x"}}, 'tasks[0].environment["1A"]', "does not start with a digit"),
    ({"environment": {"A=B": "x"}}, 'tasks[0].environment["A=B"]', "environment variable name"),
    ({"environment": {"": "x"}}, 'tasks[0].environment[""]', "environment variable name"),
    ({"environment": {"A": None}}, "tasks[0].environment.A", "has no value"),
    ({"environment": {"A": [1]}}, "tasks[0].environment.A", "environment value is a string"),
    ({"resource": ""}, "tasks[0].resource", "names an entry"),
    ({"resource": 3}, "tasks[0].resource", "names an entry"),
    ({"privileged": "yes"}, "tasks[0].privileged", "true or false"),
    ({"hostNetwork": 1}, "tasks[0].hostNetwork", "true or false"),
    ({"lead": "true"}, "tasks[0].lead", "true or false"),
    ({"foo": 1}, "tasks[0].foo", "unknown field 'foo'"),
    ({"resources": {"cpu": 1}}, "tasks[0].resources", "resource: <name>"),
    ({"env": {"A": "1"}}, "tasks[0].env", "did you mean environment"),
])
def test_invalid_task_fields(fields, field, reason):
    refused(with_task(**fields), field=field, reason=reason)


def test_args_and_environment_numbers_become_strings():
    parsed = parse_workflow(with_task(args=["--epochs", 10, "--lr", 0.5],
                                      environment={"A": 1, "B": 2.5, "C": True, "D": "", "my.var-x": "ok"}))
    only = parsed.tasks()[0]
    assert only.args == ["--epochs", "10", "--lr", "0.5"]
    assert only.environment == {"A": "1", "B": "2.5", "C": "true", "D": "", "my.var-x": "ok"}


def test_task_defaults():
    only = parse_workflow(with_task()).tasks()[0]
    assert (only.args, only.environment, only.resource, only.privileged, only.host_network, only.volume_mounts,
            only.exit_actions, only.lead) == ([], {}, "default", False, False, [], {}, True)


def test_a_missing_default_resource_is_named():
    document = spec(resources={"gpu": {"gpu": 1}}, tasks=[task(name="Train")])
    refused(document, field="tasks[0].resource",
            reason="Task Train has no specified resource: 'default' is not defined in workflow.resources "
                   "(defined: gpu)")


def test_an_undefined_resource_is_named_in_groups():
    groups = [{"name": "g", "tasks": [task(name="a", resource="big")]}]
    refused(spec(groups=groups), field="groups[0].tasks[0].resource", reason="Task a has no specified resource")


@pytest.mark.parametrize("mounts", [["/data"], ["/data:/mnt/data", "/scratch/"], []])
def test_valid_volume_mounts(mounts):
    assert parse_workflow(with_task(volumeMounts=mounts)).tasks()[0].volume_mounts == mounts


@pytest.mark.parametrize(("mounts", "field", "reason"), [
    (["/a:/b:/c"], "tasks[0].volumeMounts[0]", "both parts non-empty"),
    (["/data", "/a:"], "tasks[0].volumeMounts[1]", "both parts non-empty"),
    ([":/b"], "tasks[0].volumeMounts[0]", "both parts non-empty"),
    (["relative/path"], "tasks[0].volumeMounts[0]", "absolute"),
    (["/a/../etc"], "tasks[0].volumeMounts[0]", "'..'"),
    (["/a", 3], "tasks[0].volumeMounts[1]", "must be a string"),
    ("/data", "tasks[0].volumeMounts", "list of strings"),
])
def test_invalid_volume_mounts(mounts, field, reason):
    refused(with_task(volumeMounts=mounts), field=field, reason=reason)


@pytest.mark.parametrize(("actions", "expected"), [
    ({"COMPLETE": "0", "FAIL": "1-10,16"}, {"COMPLETE": "0", "FAIL": "1-10,16"}),
    ({"RESCHEDULE": "0,1-10"}, {"RESCHEDULE": "0,1-10"}),  # OSMO test_task: `0,1-10` ok
    ({"fail": "0,1-10"}, {"FAIL": "0,1-10"}),  # lowercase key ok
    ({"Complete": 0}, {"COMPLETE": "0"}),
    (None, {}),
])
def test_exit_actions(actions, expected):
    assert parse_workflow(with_task(exitActions=actions)).tasks()[0].exit_actions == expected


@pytest.mark.parametrize(("actions", "field", "reason"), [
    ({"FAIL": "abc"}, "tasks[0].exitActions.FAIL", "not an exit code"),  # bad code
    ({"FAIL": "1-"}, "tasks[0].exitActions.FAIL", "not an exit code"),
    ({"FAIL": "10-1"}, "tasks[0].exitActions.FAIL", "ends before it starts"),
    ({"FAIL": "256"}, "tasks[0].exitActions.FAIL", "outside the exit code range"),
    ({"RETRY": "1"}, "tasks[0].exitActions.RETRY", "unknown exit action"),  # bad key
    (["FAIL"], "tasks[0].exitActions", "mapping"),
])
def test_invalid_exit_actions(actions, field, reason):
    refused(with_task(exitActions=actions), field=field, reason=reason)


@pytest.mark.parametrize("key", ["inputs", "outputs", "files", "credentials", "downloadType", "cacheSize",
                                 "checkpoint", "kpis"])
def test_osmo_fields_not_implemented_yet_are_ignored_with_a_warning(key):
    parsed = parse_workflow(with_task(**{key: [{"url": "s3://bucket/x"}]}))
    assert parsed.warnings == [f"tasks[0].{key} ignored: not supported yet"]
    assert parsed.tasks()[0] == parse_workflow(with_task()).tasks()[0]


# ----------------------------------------------------------------------------------------------- tokens


def test_workflow_tokens_are_substituted_and_nothing_else():
    document = with_task(command=["python", "{{workflow_id}}.py"], args=["--id={{ uuid }}", "{{output}}/m",
                                                                         "{{host:train}}", "{{USER_CPU}}"],
                         environment={"RUN": "{{workflow_id}}/{{uuid}}", "T": "{{ '{{' }}"})
    parsed = parse_workflow(document)
    assert parsed.warnings == [
        "tasks[0].args[1]: {{output}} is left as literal text (only {{workflow_id}} and {{uuid}} are substituted)",
        "tasks[0].args[2]: {{host:train}} is left as literal text (only {{workflow_id}} and {{uuid}} are "
        "substituted)",
        "tasks[0].args[3]: {{USER_CPU}} is left as literal text (only {{workflow_id}} and {{uuid}} are substituted)",
        "tasks[0].environment.T: {{' }} is left as literal text (only {{workflow_id}} and {{uuid}} are substituted)",
    ]
    done = substitute_tokens(parsed, "wf-7", "1234abcd")
    only = done.tasks()[0]
    assert only.command == ["python", "wf-7.py"]
    assert only.args == ["--id=1234abcd", "{{output}}/m", "{{host:train}}", "{{USER_CPU}}"]
    assert only.environment == {"RUN": "wf-7/1234abcd", "T": "{{ '{{' }}"}
    # the parsed spec is untouched
    assert parsed.tasks()[0].command == ["python", "{{workflow_id}}.py"]
    assert done.groups[0] is not parsed.groups[0]


def test_tokens_are_not_substituted_outside_command_args_and_environment():
    parsed = parse_workflow(with_task(image="repo/{{workflow_id}}:1"))
    assert substitute_tokens(parsed, "wf-1", "u").tasks()[0].image == "repo/{{workflow_id}}:1"


def test_substituted_values_are_not_substituted_again():
    parsed = parse_workflow(with_task(args=["{{workflow_id}}"]))
    assert substitute_tokens(parsed, "{{uuid}}", "u").tasks()[0].args == ["{{uuid}}"]


# ----------------------------------------------------------------------------------------------- engine input, platforms


def test_task_input_carries_the_task_and_its_resource():
    parsed = parse_workflow(FULL)
    leader = parsed.tasks()[0]
    given = parsed.task_input(leader)
    assert (given.name, given.image, given.command, given.args) == (
        "Leader_0", "nvcr.io/nvidia/pytorch:24.01-py3", ["torchrun"], ["--nnodes", "2", "train.py"])
    assert given.environment == {"EPOCHS": "10", "DEBUG": "true", "RUN": "{{workflow_id}}"}
    assert given.resources == {"cpu": 8, "gpu": 2, "memory": "64Gi", "storage": "100Gi", "nodesExcluded": ["node-7"]}
    assert (given.privileged, given.host_network, given.volume_mounts, given.variables) == (
        True, True, ["/data", "/scratch:/mnt/scratch"], {})
    summarize = parsed.tasks()[2]
    assert parsed.task_input(summarize).resources == {"cpu": "500m", "gpu": 0, "memory": "2Gi"}  # gpu 0 is a value


def test_task_input_omits_what_is_not_given():
    parsed = parse_workflow(spec(resources={"default": {}}))
    assert parsed.task_input(parsed.tasks()[0]).resources == {}


@pytest.mark.parametrize(("platform", "default", "platforms", "expected"), [
    (None, "a100", {"a100", "h100"}, "a100"),  # default platform assigned
    ("h100", "a100", {"a100", "h100"}, "h100"),  # explicit wins
    ("h100", None, {"h100"}, "h100"),
])
def test_platform_of(platform, default, platforms, expected):
    parsed = parse_workflow(spec(resources={"default": {"platform": platform}}))
    assert parsed.platform_of(parsed.tasks()[0], default, platforms) == expected


@pytest.mark.parametrize(("platform", "default", "platforms", "field", "reason"), [
    (None, None, {"a100"}, "tasks[0].resource", "Task train does not have a platform"),  # no platform, no default
    (None, "", {"a100"}, "tasks[0].resource", "does not have a platform"),
    (None, "gone", {"a100"}, "tasks[0].resource",  # default_platform not in platforms
     "the pool's default_platform gone is not one of its platforms (a100)"),
    ("v100", "a100", {"a100", "h100"}, "resources.default.platform",
     "platform v100 does not exist in this pool (platforms: a100, h100)"),
])
def test_platform_of_errors(platform, default, platforms, field, reason):
    parsed = parse_workflow(spec(resources={"default": {"platform": platform}}))
    with pytest.raises(SpecError) as caught:
        parsed.platform_of(parsed.tasks()[0], default, platforms)
    assert (caught.value.field, reason in caught.value.reason) == (field, True), str(caught.value)


def test_platform_of_in_a_group_names_the_task_path():
    parsed = parse_workflow(spec(groups=[{"name": "g", "tasks": [task()]}]))
    with pytest.raises(SpecError) as caught:
        parsed.platform_of(parsed.tasks()[0], None, {"a"})
    assert caught.value.field == "groups[0].tasks[0].resource"


def test_a_hand_built_spec_with_a_dangling_resource_is_reported():
    orphan = TaskSpec(name="x", image="i", command=["c"], resource="nope", path="tasks[0]")
    built = WorkflowSpec(name="wf", labels={}, exec_timeout=None, queue_timeout=None, resources={},
                         groups=[GroupSpec(name="x-group", tasks=[orphan])])
    with pytest.raises(SpecError, match="Task x has no specified resource"):
        built.task_input(orphan)


# ----------------------------------------------------------------------------------------------- fill_defaults


H = timedelta(hours=1)


@pytest.mark.parametrize(("timeout", "defaults", "maxima", "expected", "warnings"), [
    # pool default used when unset
    ({}, {"exec_timeout": 1 * H, "queue_timeout": 0.5 * H}, {"exec_timeout": 2 * H, "queue_timeout": H},
     (1 * H, 0.5 * H), []),
    # user value capped at pool max (10h -> 2h, 10h -> 3h)
    ({"exec_timeout": "10h", "queue_timeout": "10h"}, {"exec_timeout": H, "queue_timeout": H},
     {"exec_timeout": 2 * H, "queue_timeout": 3 * H}, (2 * H, 3 * H),
     ["timeout.exec_timeout 10h is longer than the pool's maximum 2h; using 2h",
      "timeout.queue_timeout 10h is longer than the pool's maximum 3h; using 3h"]),
    # user value within the max is kept
    ({"exec_timeout": "90m"}, {"exec_timeout": H}, {"exec_timeout": 2 * H}, (1.5 * H, None), []),
    # nothing anywhere: no limit
    ({}, {}, {}, (None, None), []),
    # unset with only a maximum: the maximum
    ({}, {"exec_timeout": None}, {"exec_timeout": 4 * H, "queue_timeout": None}, (4 * H, None), []),
    # a default above the maximum is capped too
    ({}, {"queue_timeout": 5 * H}, {"queue_timeout": 2 * H}, (None, 2 * H),
     ["the pool's default queue_timeout 5h is longer than the pool's maximum 2h; using 2h"]),
    # short keys work too
    ({"exec_timeout": 5400}, {"exec": H}, {"exec": H}, (H, None),
     ["timeout.exec_timeout 1h30m is longer than the pool's maximum 1h; using 1h"]),
])
def test_effective_timeouts(timeout, defaults, maxima, expected, warnings):
    parsed = parse_workflow(spec(timeout=timeout))
    exec_timeout, queue_timeout, found = effective_timeouts(parsed, pool_defaults=defaults, pool_maxima=maxima)
    assert (exec_timeout, queue_timeout) == expected
    assert found == warnings
    assert parsed.warnings == []  # the spec itself is not changed


# ----------------------------------------------------------------------------------------------- docs examples


def test_documented_examples_parse():
    examples = sorted(EXAMPLES.glob("*.yaml"))
    assert {p.name for p in examples} >= {"train-gpu.yaml", "two-task-group.yaml", "invalid-missing-resource.yaml"}
    train = parse_workflow((EXAMPLES / "train-gpu.yaml").read_text(), source="train-gpu.yaml")
    assert [t.name for t in train.tasks()] == ["train"]
    assert train.resources["default"].gpu == 1 and train.exec_timeout == timedelta(hours=8)
    pair = parse_workflow((EXAMPLES / "two-task-group.yaml").read_text(), source="two-task-group.yaml")
    assert [(g.name, [(t.name, t.lead) for t in g.tasks]) for g in pair.groups] == [
        ("serve-and-test", [("server", False), ("client", True)])]
    assert pair.warnings == []


def test_the_invalid_example_fails_with_the_documented_error():
    with pytest.raises(SpecError) as caught:
        parse_workflow((EXAMPLES / "invalid-missing-resource.yaml").read_text(), source="invalid.yaml")
    message = str(caught.value)
    assert caught.value.field == "tasks[0].resource"
    assert message in (ROOT / "docs" / "workflows.md").read_text()


def _one_group(*tasks_):
    return spec(groups=[{"name": "g", "tasks": list(tasks_)}])


@pytest.mark.parametrize("document", [
    spec(version=3),
    {"version": 2, "workflow": {"name": "wf", "resources": {}, "tasks": [task()], "groups": []}},
    spec(resources={"default": {"memory": "10A"}}),
    spec(resources={"default": {"gpu": 1.5}}),
    with_task(command="python train.py"),
    spec(tasks=[task(name="Task_1"), task(name="task-1")]),
    _one_group(task(name="a"), task(name="b")),
    with_task(exitActions={"RETRY": "1"}),
    with_task(volumeMounts=["/a:/b:/c"]),
])
def test_documented_errors_are_what_the_parser_says(document):
    with pytest.raises(SpecError) as caught:
        parse_workflow(document)
    assert f"`{caught.value}`" in (ROOT / "docs" / "workflows.md").read_text()


@pytest.mark.parametrize(("platform", "default", "platforms"), [
    (None, None, {"a100"}), ("v100", "a100", {"a100", "h100"}), (None, "gone", {"a100"}),
])
def test_documented_platform_errors_are_what_the_parser_says(platform, default, platforms):
    parsed = parse_workflow(spec(resources={"default": {"platform": platform}}))
    with pytest.raises(SpecError) as caught:
        parsed.platform_of(parsed.tasks()[0], default, platforms)
    assert f"`{caught.value}`" in (ROOT / "docs" / "workflows.md").read_text()


def test_the_python_example_in_the_docs_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = (ROOT / "docs" / "workflows.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    namespace: dict = {}
    exec(compile(blocks[0], "docs/workflows.md", "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["exec_timeout"] == timedelta(hours=2)


# ----------------------------------------------------------------------------------------------- property: engine accepts

SIMPLE_PLATFORM = compile_platform(PlatformConfig(
    pool="p", platform="x",
    templates=[("user", {"spec": {"containers": [{
        "name": "{{USER_CONTAINER_NAME}}",
        "resources": {"limits": {"cpu": "{{USER_CPU}}", "memory": "{{USER_MEMORY}}", "nvidia.com/gpu": "{{USER_GPU}}",
                                 "ephemeral-storage": "{{USER_STORAGE}}"}}}]}})],
    pool_variables=dict(OSMO_DEFAULT_VARIABLES),
    privileged_allowed=True, host_network_allowed=True, allowed_mounts=["/data", "/scratch"],
))

# Mostly valid values at the edges of what the parser accepts, with a few refusals mixed in.
names = st.one_of(st.from_regex(r"[A-Za-z]([A-Za-z0-9_-]{0,8}[A-Za-z0-9])?", fullmatch=True),
                  st.sampled_from(["a", "B", "Train_Model", "x" * 63, "osmo-ctrl"]))
text = st.text(max_size=12)
label_values = st.one_of(st.from_regex(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?)?", fullmatch=True),
                         st.integers(0, 99), st.booleans())
quantities = st.one_of(
    st.none(),
    st.sampled_from(["500m", "0", "1", "2Gi", "10.5Gi", "1G", "1e3", "0.001", "100Ki", "+1Gi", "1E", " 3Gi ",
                     "7.5", "1n", "10A"]),
    st.integers(0, 2**40),
)
cpus = st.one_of(quantities, st.floats(0, 1e4, allow_nan=False), st.decimals(0, 64, places=3).map(str))
resource_bodies = st.fixed_dictionaries({}, optional={
    "cpu": cpus, "gpu": st.one_of(st.none(), st.integers(0, 16), st.sampled_from([2.0, "3", " 4 "])),
    "memory": quantities, "storage": quantities,
    "nodesExcluded": st.lists(st.sampled_from(["node-1", "n2", "gpu-node.example.com"]), max_size=2),
})
task_bodies = st.fixed_dictionaries(
    {"name": names,
     "image": st.sampled_from(["ubuntu:24.04", "nvcr.io/nvidia/pytorch:24.01-py3", "repo/{{workflow_id}}:1",
                               "localhost:5000/x@sha256:" + "a" * 64]),
     "command": st.lists(st.one_of(text, st.integers(0, 9)), min_size=1, max_size=3)},
    optional={
        "args": st.lists(st.one_of(text, st.integers(), st.floats(allow_nan=False),
                                   st.sampled_from(["{{workflow_id}}", "{{ uuid }}", "{{output}}"])), max_size=3),
        "environment": st.dictionaries(st.sampled_from(["A", "B_1", "my.var", "x-y", "_u", ".dot", "-dash"]),
                                       st.one_of(text, st.integers(), st.floats(allow_nan=False), st.booleans()),
                                       max_size=4),
        "resource": st.sampled_from(["default", "default", "default", "gpu"]),
        "privileged": st.booleans(), "hostNetwork": st.booleans(),
        "volumeMounts": st.lists(st.sampled_from(["/data", "/data:/mnt/d", "/scratch:/s", "/scratch/", "/a:"]),
                                 max_size=2, unique=True),
        "exitActions": st.dictionaries(st.sampled_from(["COMPLETE", "fail", "Reschedule"]),
                                       st.sampled_from(["0", "1-10,16", "255", 3]), max_size=2),
        "inputs": st.just([{"task": "prep"}]),
    },
)
specs = st.fixed_dictionaries({
    "version": st.sampled_from([2, "2", 2.0]),
    "workflow": st.fixed_dictionaries({
        "name": st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True),
        "resources": st.fixed_dictionaries({"default": resource_bodies}, optional={"gpu": resource_bodies}),
        "tasks": st.lists(task_bodies, min_size=1, max_size=4),
    }, optional={"labels": st.dictionaries(st.sampled_from(["team", "a-b", "x.io/y", "k8s.io/z_1"]), label_values,
                                           max_size=3),
                 "timeout": st.fixed_dictionaries({}, optional={
                     "exec_timeout": st.sampled_from(["1h", 30, 1.5, "PT2H", "500ms"]),
                     "queue_timeout": st.sampled_from(["1d", 3600, "P1DT1H"])}),
                 "pool": st.just("ignored")}),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=specs)
def test_every_accepted_spec_gives_task_inputs_the_engine_resolves(document):
    try:
        parsed = parse_workflow(document)
    except SpecError as error:
        assert error.reason  # refusals always say why
        return
    for item in parsed.tasks():
        given_task = parsed.task_input(item)
        result = resolve(SIMPLE_PLATFORM, given_task, WorkflowContext(workflow_id=f"{parsed.name}-1",
                                                                      group_name=item.group))
        container = result.pod["spec"]["containers"][0]
        assert (container["image"], container["command"]) == (item.image, item.command)
        assert result.validation["gates"] == [], result.validation
        assert result.validation["schema"] == [], result.validation


def _accepted_rich(document) -> bool:
    try:
        parsed = parse_workflow(document)
    except SpecError:
        return False
    items = parsed.tasks()
    return len(items) >= 2 and any(t.volume_mounts for t in items) and any(t.environment for t in items)


def test_the_generator_also_produces_rich_accepted_specs():
    """Guard against a generator that only ever produces refused specs (the property would pass vacuously)."""
    found = find(specs, _accepted_rich, settings=settings(max_examples=2000, database=None, phases=[Phase.generate]))
    assert len(parse_workflow(found).tasks()) >= 2
