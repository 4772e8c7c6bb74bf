"""workflows.spec: the OSMO v2 workflow spec (NVIDIA/OSMO's `src/utils/job/workflow.py` and `task.py`, cases
from their tests): the document, its version and shape, the workflow's name, labels and timeouts. Tasks:
test_workflow_spec_tasks.py; engine input, defaults, the docs' examples: test_workflow_spec_engine.py."""

from __future__ import annotations

import copy
import json
import re
from datetime import timedelta

import pytest
import yaml

from pools.engine import EngineError
from tests.unit.workflow_spec_builders import FULL, refused, spec, task, with_task
from workflows.spec import (
    ResourceSpec,
    SpecError,
    TaskSpec,
    parse_workflow,
)

# ----------------------------------------------------------------------------------------------- a whole spec


def test_a_complete_spec_is_normalized():
    parsed = parse_workflow(FULL, source="full.yaml")
    assert parsed.name == "train-resnet"
    assert parsed.labels == {"team": "vision", "example.com/tier": "gold", "run": "3"}
    assert (parsed.exec_timeout, parsed.queue_timeout) == (timedelta(hours=8), timedelta(hours=6))
    assert parsed.resources == {
        "default": ResourceSpec("default", cpu="500m", gpu=0, memory="2Gi"),
        "gpu": ResourceSpec(
            "gpu", cpu=8, gpu=2, memory="64Gi", storage="100Gi", platform="a100", nodes_excluded=["node-7"]
        ),
    }
    trainers, report = parsed.groups
    assert (trainers.name, trainers.barrier, trainers.ignore_non_lead_status) == ("trainers", True, False)
    assert (report.name, report.barrier, report.ignore_non_lead_status) == ("report", False, True)
    leader, worker = trainers.tasks
    assert leader == TaskSpec(
        name="Leader_0",
        image="nvcr.io/nvidia/pytorch:24.01-py3",
        command=["torchrun"],
        args=["--nnodes", "2", "train.py"],
        environment={"EPOCHS": "10", "DEBUG": "true", "RUN": "{{workflow_id}}"},
        resource="gpu",
        privileged=True,
        host_network=True,
        volume_mounts=["/data", "/scratch:/mnt/scratch"],
        exit_actions={"COMPLETE": "0", "RESCHEDULE": "1-10,16"},
        lead=True,
        group="trainers",
    )
    assert leader.path == "groups[0].tasks[0]"
    assert (worker.lead, worker.group, worker.resource, worker.args, worker.environment) == (
        False,
        "trainers",
        "gpu",
        [],
        {},
    )
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
    text = (
        "version: 2\nworkflow:\n  name: wf\n  resources: {default: {}}\n  tasks:\n  - name: a\n    image: i\n"
        "    command: [c]\n    inputs: [{when: 2024-01-01, 3: x}]\n"
    )
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


@pytest.mark.parametrize(
    ("document", "field", "reason"),
    [
        ([1, 2], "", "a workflow spec is a mapping"),
        ({"version": 2}, "workflow", "is required"),
        ({"version": 2, "workflow": "train"}, "workflow", "is required"),
        ({"version": 2, "workflow": {"name": "a"}, "extra": 1}, "extra", "unknown field 'extra'"),
        ({"version": 2, "name": "wf", "tasks": []}, "name", "go under workflow:"),
        (spec(pools="p"), "pools", "unknown field 'pools'"),
    ],
)
def test_document_shape(document, field, reason):
    refused(document, field=field, reason=reason)


def test_pool_backend_and_default_values_are_ignored_with_warnings():
    document = spec(pool="other-pool", backend="cluster-b")
    document["default-values"] = {"x": 1}
    assert parse_workflow(document).warnings == [
        "default-values ignored: only a spec sent as text is rendered; {{...}} stays literal text",
        "pool ignored: the pool in the submission URL decides",
        "backend ignored: the pool in the submission URL decides",
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("version: 2\nworkflow:\n  name: wf\n  tasks:\n  - name: a\n    image: [\n", r"bad\.yaml:7:1"),
        ("version: 2\nworkflow:\n  name: wf\n   tasks: []\n", r"bad\.yaml:4:\d+"),
        ("workflow:\n\tname: wf\n", r"bad\.yaml:2:1"),
    ],
)
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


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (None, "is required"),
        ("", "is required"),
        (12, "is required"),
        ("Train", "DNS-1123 label"),
        ("my_wf", "for example 'my-wf'"),
        ("-a", "DNS-1123"),
        ("a-", "DNS-1123"),
        ("a.b", "DNS-1123"),
        ("x" * 41, "at most 40 characters"),
    ],
)
def test_invalid_workflow_names(name, reason):
    refused(spec(name=name), field="name", reason=reason)


def test_labels_are_validated_and_stringified():
    parsed = parse_workflow(
        spec(labels={"team": "vision", "example.com/tier": "gold", "n": 3, "on": True, "empty": ""})
    )
    assert parsed.labels == {"team": "vision", "example.com/tier": "gold", "n": "3", "on": "true", "empty": ""}


@pytest.mark.parametrize(
    ("labels", "field", "reason"),
    [
        ({"bad key": "x"}, 'labels["bad key"]', "label key name part"),
        ({"a/b/c": "x"}, 'labels["a/b/c"]', "qualified name"),
        ({"Example.COM/x": "x"}, 'labels["Example.COM/x"]', "prefix part"),
        ({"team": "has space"}, "labels.team", "label value"),
        ({"team": "-x"}, "labels.team", "label value"),
        ({"team": "x" * 64}, "labels.team", "no more than 63"),
        ({"team": ["a"]}, "labels.team", "is a string"),
        ({"pool-portal/workflow": "x"}, 'labels["pool-portal/workflow"]', "set only by the portal"),
        ({f"k{i}": "v" for i in range(17)}, "labels", "at most 16"),
        (["team"], "labels", "mapping"),
    ],
)
def test_invalid_labels(labels, field, reason):
    refused(spec(labels=labels), field=field, reason=reason)


def test_sixteen_labels_are_allowed():
    assert len(parse_workflow(spec(labels={f"k{i}": "v" for i in range(16)})).labels) == 16


# ----------------------------------------------------------------------------------------------- timeouts (TimeoutSpec)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (30, timedelta(seconds=30)),  # int seconds
        (1.5, timedelta(seconds=1.5)),  # float seconds
        ("PT1H", timedelta(hours=1)),  # ISO 8601
        ("P1DT6H", timedelta(days=1, hours=6)),
        ("10s", timedelta(seconds=10)),  # short units
        ("2h", timedelta(hours=2)),
        ("7d", timedelta(days=7)),
        ("30m", timedelta(minutes=30)),
        ("1500ms", timedelta(seconds=1.5)),
        ("250us", timedelta(microseconds=250)),
        (timedelta(minutes=5), timedelta(minutes=5)),  # passes through (dict input)
        (None, None),
    ],
)
def test_timeout_spec(value, expected):
    parsed = parse_workflow(spec(timeout={"exec_timeout": value, "queue_timeout": value}))
    assert parsed.exec_timeout == expected
    assert parsed.queue_timeout == expected


@pytest.mark.parametrize(
    "value", ["not-a-duration", "1h30m", "2 hours", "2H", 0, -5, "0s", 0.0, -1.5, float("inf"), True, [1], timedelta(0)]
)
def test_invalid_timeouts(value):
    refused(spec(timeout={"queue_timeout": value}), field="timeout.queue_timeout")


@pytest.mark.parametrize(
    ("timeout", "field"),
    [
        ({"exec": "1h"}, "timeout.exec"),
        ("1h", "timeout"),
        (["1h"], "timeout"),
    ],
)
def test_timeout_shape(timeout, field):
    refused(spec(timeout=timeout), field=field)
