"""workflows.spec: task inputs for the engine, platforms, fill_defaults, the docs' examples, and the property that
every accepted spec resolves."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from pools.engine import PlatformConfig, WorkflowContext, compile_platform, resolve
from pools.engine.defaults import OSMO_DEFAULT_VARIABLES
from tests.unit.workflow_spec_builders import EXAMPLES, FULL, ROOT, spec, task, with_task
from workflows.spec import (
    GroupSpec,
    SpecError,
    TaskSpec,
    WorkflowSpec,
    effective_timeouts,
    parse_workflow,
)

# --------------------------------------------------------------------------------------- engine input, platforms


def test_task_input_carries_the_task_and_its_resource():
    parsed = parse_workflow(FULL)
    leader = parsed.tasks()[0]
    given = parsed.task_input(leader)
    assert (given.name, given.image, given.command, given.args) == (
        "Leader_0",
        "nvcr.io/nvidia/pytorch:24.01-py3",
        ["torchrun"],
        ["--nnodes", "2", "train.py"],
    )
    assert given.environment == {"EPOCHS": "10", "DEBUG": "true", "RUN": "{{workflow_id}}"}
    assert given.resources == {"cpu": 8, "gpu": 2, "memory": "64Gi", "storage": "100Gi", "nodesExcluded": ["node-7"]}
    assert (given.privileged, given.host_network, given.volume_mounts, given.variables) == (
        True,
        True,
        ["/data", "/scratch:/mnt/scratch"],
        {},
    )
    summarize = parsed.tasks()[2]
    assert parsed.task_input(summarize).resources == {"cpu": "500m", "gpu": 0, "memory": "2Gi"}  # gpu 0 is a value


def test_task_input_omits_what_is_not_given():
    parsed = parse_workflow(spec(resources={"default": {}}))
    assert parsed.task_input(parsed.tasks()[0]).resources == {}


@pytest.mark.parametrize(
    ("platform", "default", "platforms", "expected"),
    [
        (None, "a100", {"a100", "h100"}, "a100"),  # default platform assigned
        ("h100", "a100", {"a100", "h100"}, "h100"),  # explicit wins
        ("h100", None, {"h100"}, "h100"),
    ],
)
def test_platform_of(platform, default, platforms, expected):
    parsed = parse_workflow(spec(resources={"default": {"platform": platform}}))
    assert parsed.platform_of(parsed.tasks()[0], default, platforms) == expected


@pytest.mark.parametrize(
    ("platform", "default", "platforms", "field", "reason"),
    [
        (None, None, {"a100"}, "tasks[0].resource", "Task train does not have a platform"),  # no platform, no default
        (None, "", {"a100"}, "tasks[0].resource", "does not have a platform"),
        (
            None,
            "gone",
            {"a100"},
            "tasks[0].resource",  # default_platform not in platforms
            "the pool's default_platform gone is not one of its platforms (a100)",
        ),
        (
            "v100",
            "a100",
            {"a100", "h100"},
            "resources.default.platform",
            "platform v100 does not exist in this pool (platforms: a100, h100)",
        ),
    ],
)
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
    built = WorkflowSpec(
        name="wf",
        labels={},
        exec_timeout=None,
        queue_timeout=None,
        resources={},
        groups=[GroupSpec(name="x-group", tasks=[orphan])],
    )
    with pytest.raises(SpecError, match="Task x has no specified resource"):
        built.task_input(orphan)


# ----------------------------------------------------------------------------------------------- fill_defaults


H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("timeout", "defaults", "maxima", "expected", "warnings"),
    [
        # pool default used when unset
        (
            {},
            {"exec_timeout": 1 * H, "queue_timeout": 0.5 * H},
            {"exec_timeout": 2 * H, "queue_timeout": H},
            (1 * H, 0.5 * H),
            [],
        ),
        # user value capped at pool max (10h -> 2h, 10h -> 3h)
        (
            {"exec_timeout": "10h", "queue_timeout": "10h"},
            {"exec_timeout": H, "queue_timeout": H},
            {"exec_timeout": 2 * H, "queue_timeout": 3 * H},
            (2 * H, 3 * H),
            [
                "timeout.exec_timeout 10h is longer than the pool's maximum 2h; using 2h",
                "timeout.queue_timeout 10h is longer than the pool's maximum 3h; using 3h",
            ],
        ),
        # user value within the max is kept
        ({"exec_timeout": "90m"}, {"exec_timeout": H}, {"exec_timeout": 2 * H}, (1.5 * H, None), []),
        # nothing anywhere: no limit
        ({}, {}, {}, (None, None), []),
        # unset with only a maximum: the maximum
        ({}, {"exec_timeout": None}, {"exec_timeout": 4 * H, "queue_timeout": None}, (4 * H, None), []),
        # a default above the maximum is capped too
        (
            {},
            {"queue_timeout": 5 * H},
            {"queue_timeout": 2 * H},
            (None, 2 * H),
            ["the pool's default queue_timeout 5h is longer than the pool's maximum 2h; using 2h"],
        ),
        # short keys work too
        (
            {"exec_timeout": 5400},
            {"exec": H},
            {"exec": H},
            (H, None),
            ["timeout.exec_timeout 1h30m is longer than the pool's maximum 1h; using 1h"],
        ),
    ],
)
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
        ("serve-and-test", [("server", False), ("client", True)])
    ]
    assert pair.warnings == []


def test_the_invalid_example_fails_with_the_documented_error():
    with pytest.raises(SpecError) as caught:
        parse_workflow((EXAMPLES / "invalid-missing-resource.yaml").read_text(), source="invalid.yaml")
    message = str(caught.value)
    assert caught.value.field == "tasks[0].resource"
    assert message in (ROOT / "docs" / "workflows.md").read_text()


def _one_group(*tasks_):
    return spec(groups=[{"name": "g", "tasks": list(tasks_)}])


@pytest.mark.parametrize(
    "document",
    [
        spec(version=3),
        {"version": 2, "workflow": {"name": "wf", "resources": {}, "tasks": [task()], "groups": []}},
        spec(resources={"default": {"memory": "10A"}}),
        spec(resources={"default": {"gpu": 1.5}}),
        with_task(command="python train.py"),
        spec(tasks=[task(name="Task_1"), task(name="task-1")]),
        _one_group(task(name="a"), task(name="b")),
        with_task(exitActions={"RETRY": "1"}),
        with_task(volumeMounts=["/a:/b:/c"]),
    ],
)
def test_documented_errors_are_what_the_parser_says(document):
    with pytest.raises(SpecError) as caught:
        parse_workflow(document)
    assert f"`{caught.value}`" in (ROOT / "docs" / "workflows.md").read_text()


@pytest.mark.parametrize(
    ("platform", "default", "platforms"),
    [
        (None, None, {"a100"}),
        ("v100", "a100", {"a100", "h100"}),
        (None, "gone", {"a100"}),
    ],
)
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


# --------------------------------------------------------------------------------------- property: engine accepts

SIMPLE_PLATFORM = compile_platform(
    PlatformConfig(
        pool="p",
        platform="x",
        templates=[
            (
                "user",
                {
                    "spec": {
                        "containers": [
                            {
                                "name": "{{USER_CONTAINER_NAME}}",
                                "resources": {
                                    "limits": {
                                        "cpu": "{{USER_CPU}}",
                                        "memory": "{{USER_MEMORY}}",
                                        "nvidia.com/gpu": "{{USER_GPU}}",
                                        "ephemeral-storage": "{{USER_STORAGE}}",
                                    }
                                },
                            }
                        ]
                    }
                },
            )
        ],
        pool_variables=dict(OSMO_DEFAULT_VARIABLES),
        privileged_allowed=True,
        host_network_allowed=True,
        allowed_mounts=["/data", "/scratch"],
    )
)

# Mostly valid values at the edges of what the parser accepts, with a few refusals mixed in.
names = st.one_of(
    st.from_regex(r"[A-Za-z]([A-Za-z0-9_-]{0,8}[A-Za-z0-9])?", fullmatch=True),
    st.sampled_from(["a", "B", "Train_Model", "x" * 63, "osmo-ctrl"]),
)
text = st.text(max_size=12)
label_values = st.one_of(
    st.from_regex(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?)?", fullmatch=True),
    st.integers(0, 99),
    st.booleans(),
)
quantities = st.one_of(
    st.none(),
    st.sampled_from(
        ["500m", "0", "1", "2Gi", "10.5Gi", "1G", "1e3", "0.001", "100Ki", "+1Gi", "1E", " 3Gi ", "7.5", "1n", "10A"]
    ),
    st.integers(0, 2**40),
)
cpus = st.one_of(quantities, st.floats(0, 1e4, allow_nan=False), st.decimals(0, 64, places=3).map(str))
resource_bodies = st.fixed_dictionaries(
    {},
    optional={
        "cpu": cpus,
        "gpu": st.one_of(st.none(), st.integers(0, 16), st.sampled_from([2.0, "3", " 4 "])),
        "memory": quantities,
        "storage": quantities,
        "nodesExcluded": st.lists(st.sampled_from(["node-1", "n2", "gpu-node.example.com"]), max_size=2),
    },
)
task_bodies = st.fixed_dictionaries(
    {
        "name": names,
        "image": st.sampled_from(
            [
                "ubuntu:24.04",
                "nvcr.io/nvidia/pytorch:24.01-py3",
                "repo/{{workflow_id}}:1",
                "localhost:5000/x@sha256:" + "a" * 64,
            ]
        ),
        "command": st.lists(st.one_of(text, st.integers(0, 9)), min_size=1, max_size=3),
    },
    optional={
        "args": st.lists(
            st.one_of(
                text,
                st.integers(),
                st.floats(allow_nan=False),
                st.sampled_from(["{{workflow_id}}", "{{ uuid }}", "{{output}}"]),
            ),
            max_size=3,
        ),
        "environment": st.dictionaries(
            st.sampled_from(["A", "B_1", "my.var", "x-y", "_u", ".dot", "-dash"]),
            st.one_of(text, st.integers(), st.floats(allow_nan=False), st.booleans()),
            max_size=4,
        ),
        "resource": st.sampled_from(["default", "default", "default", "gpu"]),
        "privileged": st.booleans(),
        "hostNetwork": st.booleans(),
        "volumeMounts": st.lists(
            st.sampled_from(["/data", "/data:/mnt/d", "/scratch:/s", "/scratch/", "/a:"]), max_size=2, unique=True
        ),
        "exitActions": st.dictionaries(
            st.sampled_from(["COMPLETE", "fail", "Reschedule"]), st.sampled_from(["0", "1-10,16", "255", 3]), max_size=2
        ),
        "inputs": st.just([{"task": "prep"}]),
    },
)
specs = st.fixed_dictionaries(
    {
        "version": st.sampled_from([2, "2", 2.0]),
        "workflow": st.fixed_dictionaries(
            {
                "name": st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True),
                "resources": st.fixed_dictionaries({"default": resource_bodies}, optional={"gpu": resource_bodies}),
                "tasks": st.lists(task_bodies, min_size=1, max_size=4),
            },
            optional={
                "labels": st.dictionaries(
                    st.sampled_from(["team", "a-b", "x.io/y", "k8s.io/z_1"]), label_values, max_size=3
                ),
                "timeout": st.fixed_dictionaries(
                    {},
                    optional={
                        "exec_timeout": st.sampled_from(["1h", 30, 1.5, "PT2H", "500ms"]),
                        "queue_timeout": st.sampled_from(["1d", 3600, "P1DT1H"]),
                    },
                ),
                "pool": st.just("ignored"),
            },
        ),
    }
)


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
        result = resolve(
            SIMPLE_PLATFORM, given_task, WorkflowContext(workflow_id=f"{parsed.name}-1", group_name=item.group)
        )
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
