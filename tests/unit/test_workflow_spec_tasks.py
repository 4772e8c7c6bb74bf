"""workflows.spec: resources, tasks and groups, task fields and workflow tokens."""

from __future__ import annotations

import pytest

from tests.unit.workflow_spec_builders import refused, spec, task, with_task
from workflows.spec import (
    ResourceSpec,
    parse_workflow,
    substitute_tokens,
)

# ----------------------------------------------------------------------------------------------- resources


def resource_spec(**fields) -> ResourceSpec:
    return parse_workflow(spec(resources={"default": fields})).resources["default"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
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
    ],
)
def test_valid_resources(fields, expected):
    assert resource_spec(**fields) == expected


def test_an_empty_resource_entry_means_all_defaults():
    assert parse_workflow(spec(resources={"default": None})).resources == {"default": ResourceSpec("default")}


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("cpu", "abc", "not a Kubernetes quantity"),
        ("cpu", -1, "negative"),
        ("cpu", "-500m", "negative"),
        ("cpu", True, "number of cores"),
        ("cpu", [1], "number of cores"),
        ("gpu", -1, "whole number"),
        ("gpu", 1.5, "whole number"),
        ("gpu", "two", "whole number"),
        ("gpu", True, "whole number"),
        ("gpu", "1.5", "whole number"),
        ("memory", "10A", "not a Kubernetes quantity"),
        ("memory", "Gi", "not a Kubernetes quantity"),
        ("memory", "-1Gi", "negative"),
        ("memory", True, "Kubernetes quantity"),
        ("memory", 1.5, "Kubernetes quantity"),
        ("storage", "10A", "not a Kubernetes quantity"),
        ("storage", "1 Gi", "not a Kubernetes quantity"),
        ("platform", 3, "non-empty string"),
        ("platform", "", "non-empty string"),
        ("nodesExcluded", "node-1", "list of strings"),
        ("nodesExcluded", [1], "must be a string"),
        ("nodesExcluded", [""], "non-empty"),
    ],
)
def test_invalid_resource_values_name_path_and_value(key, value, reason):
    item = key == "nodesExcluded" and isinstance(value, list)  # the bad list item is named, not the list
    error = refused(
        spec(resources={"gpu": {key: value}}, tasks=[task(resource="gpu")]),
        field=f"resources.gpu.{key}" + ("[0]" if item else ""),
        reason=reason,
    )
    shown = value[0] if item else value
    assert error.value == shown
    assert f"(value: {shown!r})" in str(error)


@pytest.mark.parametrize(
    ("resources", "field", "reason"),
    [
        ({"default": {"cpus": 2}}, "resources.default.cpus", "unknown field 'cpus'"),
        ({"default": {"cpu": {"count": 2}}}, "resources.default.cpu", "number of cores"),
        ({"default": "big"}, "resources.default", "must be a mapping"),
        (["default"], "resources", "must be a mapping"),
        ({"": {}}, "resources", "non-empty string"),
    ],
)
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
        ("prep-group", ["prep"], True, True),
        ("train-group", ["train"], True, True),
    ]
    assert all(t.lead for t in parsed.tasks())
    assert [t.group for t in parsed.tasks()] == ["prep-group", "train-group"]
    assert [t.path for t in parsed.tasks()] == ["tasks[0]", "tasks[1]"]


@pytest.mark.parametrize(
    ("workflow", "field", "reason"),
    [
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
        (
            {"groups": [{"name": "g", "tasks": [task(name="a"), task(name="b")]}]},
            "groups[0].tasks",
            'Group "g" has 0 leader(s) but must have exactly one',
        ),
        (
            {"groups": [{"name": "g", "tasks": [task(name="a", lead=True), task(name="b", lead=True)]}]},
            "groups[0].tasks",
            "has 2 leader(s)",
        ),
        ({"tasks": ["train"]}, "tasks[0]", "a task is a mapping"),
    ],
)
def test_tasks_and_groups_shape(workflow, field, reason):
    document = {"version": 2, "workflow": {"name": "wf", "resources": {"default": {}}, **workflow}}
    refused(document, field=field, reason=reason)


def test_error_paths_reach_into_groups():
    groups = [{"name": "a", "tasks": [task(name="one")]}, {"name": "b", "tasks": [task(name="two", image=None)]}]
    refused(spec(groups=groups), field="groups[1].tasks[0].image", reason="is required")


@pytest.mark.parametrize(
    ("names", "field"),
    [
        (["Task_1", "task-1"], "tasks[1].name"),  # case-insensitive, '-' ≡ '_'
        (["train", "TRAIN"], "tasks[1].name"),
    ],
)
def test_task_names_are_unique(names, field):
    refused(spec(tasks=[task(name=n) for n in names]), field=field, reason="same name as tasks[0]")


@pytest.mark.parametrize(
    ("groups", "field", "reason"),
    [
        ([{"name": "shared", "tasks": [task(name="shared")]}], "groups[0].tasks[0].name", "same name as groups[0]"),
        (
            [{"name": "g-1", "tasks": [task(name="a")]}, {"name": "G_1", "tasks": [task(name="b")]}],
            "groups[1].name",
            "same name as groups[0]",
        ),
        (
            [{"name": "g1", "tasks": [task(name="a")]}, {"name": "g2", "tasks": [task(name="A")]}],
            "groups[1].tasks[0].name",
            "same name as groups[0].tasks[0]",
        ),
        (
            [{"name": "g1", "tasks": [task(name="a")]}, {"name": "a", "tasks": [task(name="b")]}],
            "groups[1].name",
            "same name as groups[0].tasks[0]",
        ),
    ],
)
def test_names_are_unique_across_tasks_and_groups(groups, field, reason):
    refused(spec(groups=groups), field=field, reason=reason)


def test_max_tasks_counts_every_task():
    refused(spec(tasks=[task(name=f"t{i}") for i in range(4)]), max_tasks=3, field="tasks", reason="4 tasks; at most 3")
    groups = [
        {"name": "g1", "tasks": [task(name="a"), task(name="b", lead=True)]},
        {"name": "g2", "tasks": [task(name="c"), task(name="d", lead=True)]},
    ]
    refused(spec(groups=groups), max_tasks=3, field="groups", reason="4 tasks; at most 3")
    assert len(parse_workflow(spec(groups=groups), max_tasks=4).tasks()) == 4


def test_max_tasks_defaults_to_100():
    assert len(parse_workflow(spec(tasks=[task(name=f"t{i}") for i in range(100)])).tasks()) == 100
    refused(spec(tasks=[task(name=f"t{i}") for i in range(101)]), field="tasks", reason="101 tasks")


# ----------------------------------------------------------------------------------------------- task fields


@pytest.mark.parametrize("name", ["a", "Train_Model", "a-b_c1", "x" * 63])
def test_valid_task_names(name):
    assert parse_workflow(with_task(name=name)).tasks()[0].name == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (None, "needs a name"),
        ("", "needs a name"),
        ("1abc", "start with a letter"),
        ("a b", "only letters"),
        ("a.b", "only letters"),
        ("-a", "start with a letter"),
        ("a_", "end with a letter or digit"),
        ("x" * 64, "at most 63"),
        (7, "needs a name"),
        ("osmo-ctrl", "cannot be named 'osmo-ctrl'"),
        ("OSMO_CTRL", "cannot be named 'osmo-ctrl'"),
        ("osmo_ctrl", "cannot be named"),
    ],
)
def test_invalid_task_names(name, reason):
    refused(with_task(name=name), field="tasks[0].name", reason=reason)


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
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
    ],
)
def test_invalid_task_fields(fields, field, reason):
    refused(with_task(**fields), field=field, reason=reason)


def test_args_and_environment_numbers_become_strings():
    parsed = parse_workflow(
        with_task(
            args=["--epochs", 10, "--lr", 0.5], environment={"A": 1, "B": 2.5, "C": True, "D": "", "my.var-x": "ok"}
        )
    )
    only = parsed.tasks()[0]
    assert only.args == ["--epochs", "10", "--lr", "0.5"]
    assert only.environment == {"A": "1", "B": "2.5", "C": "true", "D": "", "my.var-x": "ok"}


def test_task_defaults():
    only = parse_workflow(with_task()).tasks()[0]
    assert (
        only.args,
        only.environment,
        only.resource,
        only.privileged,
        only.host_network,
        only.volume_mounts,
        only.exit_actions,
        only.lead,
    ) == ([], {}, "default", False, False, [], {}, True)


def test_a_missing_default_resource_is_named():
    document = spec(resources={"gpu": {"gpu": 1}}, tasks=[task(name="Train")])
    refused(
        document,
        field="tasks[0].resource",
        reason="Task Train has no specified resource: 'default' is not defined in workflow.resources (defined: gpu)",
    )


def test_an_undefined_resource_is_named_in_groups():
    groups = [{"name": "g", "tasks": [task(name="a", resource="big")]}]
    refused(spec(groups=groups), field="groups[0].tasks[0].resource", reason="Task a has no specified resource")


@pytest.mark.parametrize("mounts", [["/data"], ["/data:/mnt/data", "/scratch/"], []])
def test_valid_volume_mounts(mounts):
    assert parse_workflow(with_task(volumeMounts=mounts)).tasks()[0].volume_mounts == mounts


@pytest.mark.parametrize(
    ("mounts", "field", "reason"),
    [
        (["/a:/b:/c"], "tasks[0].volumeMounts[0]", "both parts non-empty"),
        (["/data", "/a:"], "tasks[0].volumeMounts[1]", "both parts non-empty"),
        ([":/b"], "tasks[0].volumeMounts[0]", "both parts non-empty"),
        (["relative/path"], "tasks[0].volumeMounts[0]", "absolute"),
        (["/a/../etc"], "tasks[0].volumeMounts[0]", "'..'"),
        (["/a", 3], "tasks[0].volumeMounts[1]", "must be a string"),
        ("/data", "tasks[0].volumeMounts", "list of strings"),
    ],
)
def test_invalid_volume_mounts(mounts, field, reason):
    refused(with_task(volumeMounts=mounts), field=field, reason=reason)


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ({"COMPLETE": "0", "FAIL": "1-10,16"}, {"COMPLETE": "0", "FAIL": "1-10,16"}),
        ({"RESCHEDULE": "0,1-10"}, {"RESCHEDULE": "0,1-10"}),  # OSMO test_task: `0,1-10` ok
        ({"fail": "0,1-10"}, {"FAIL": "0,1-10"}),  # lowercase key ok
        ({"Complete": 0}, {"COMPLETE": "0"}),
        (None, {}),
    ],
)
def test_exit_actions(actions, expected):
    assert parse_workflow(with_task(exitActions=actions)).tasks()[0].exit_actions == expected


@pytest.mark.parametrize(
    ("actions", "field", "reason"),
    [
        ({"FAIL": "abc"}, "tasks[0].exitActions.FAIL", "not an exit code"),  # bad code
        ({"FAIL": "1-"}, "tasks[0].exitActions.FAIL", "not an exit code"),
        ({"FAIL": "10-1"}, "tasks[0].exitActions.FAIL", "ends before it starts"),
        ({"FAIL": "256"}, "tasks[0].exitActions.FAIL", "outside the exit code range"),
        ({"RETRY": "1"}, "tasks[0].exitActions.RETRY", "unknown exit action"),  # bad key
        (["FAIL"], "tasks[0].exitActions", "mapping"),
    ],
)
def test_invalid_exit_actions(actions, field, reason):
    refused(with_task(exitActions=actions), field=field, reason=reason)


@pytest.mark.parametrize("key", ["inputs", "outputs", "files", "downloadType", "cacheSize", "checkpoint", "kpis"])
def test_osmo_fields_not_implemented_yet_are_ignored_with_a_warning(key):
    parsed = parse_workflow(with_task(**{key: [{"url": "s3://bucket/x"}]}))
    assert parsed.warnings == [f"tasks[0].{key} ignored: not supported yet"]
    assert parsed.tasks()[0] == parse_workflow(with_task()).tasks()[0]


# ----------------------------------------------------------------------------------------------- tokens


def test_workflow_tokens_are_substituted_and_nothing_else():
    document = with_task(
        command=["python", "{{workflow_id}}.py"],
        args=["--id={{ uuid }}", "{{output}}/m", "{{host:train}}", "{{USER_CPU}}"],
        environment={"RUN": "{{workflow_id}}/{{uuid}}", "T": "{{ '{{' }}"},
    )
    parsed = parse_workflow(document)
    assert parsed.warnings == [
        "tasks[0].args[1]: {{output}} is left as literal text: the portal moves no data (OSMO puts "
        "/osmo/data/output, the directory its sidecar uploads when the task ends; the task's inputs and outputs "
        "are ignored); write a path your command reads or writes itself, and move the data in the command",
        "tasks[0].args[3]: {{USER_CPU}} is left as literal text: not a token OSMO or the portal substitutes "
        "(OSMO: workflow_id, output, input:<n>, host:<task>)",
        "tasks[0].environment.T: {{' }} is left as literal text: not a token OSMO or the portal substitutes "
        "(OSMO: workflow_id, output, input:<n>, host:<task>)",
    ]
    done = substitute_tokens(parsed, "wf-7", "1234abcd")  # no namespace: {{host:…}} stays as written
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


# ------------------------------------------------------------------------------------- OSMO's other spec tokens
# NVIDIA/OSMO src/utils/job/task.py: TaskGroupSpec.parse maps host:<task> of each task of the group to
# f'{task_uuid}.{get_group_subdomain_name(group_uuid)}.{namespace}.svc.cluster.local' (common.py: 'osmo-' + uuid);
# TaskSpec.parse maps output to f'{DATA_LOCATION}/output' and input:<n> / input:<task> to
# f'{DATA_LOCATION}/input/{index}' (kb_objects.py: DATA_LOCATION = '/osmo/data').


def two_groups(**second_fields) -> dict:
    pair = [task(name="server", lead=True), task(name="client", **second_fields)]
    return spec(groups=[{"name": "pair", "tasks": pair}, {"name": "solo", "tasks": [task(name="other")]}])


def test_host_of_a_task_of_the_same_group_becomes_its_pod_name_in_the_namespace():
    from pools.engine.resolve import group_uuid, task_uuid

    parsed = parse_workflow(two_groups(command=["nc", "{{ host:server }}", "80"], environment={"S": "{{host:server}}"}))
    assert parsed.warnings == []
    client = substitute_tokens(parsed, "wf-1", "abc", "wf-jobs").tasks()[1]
    name = f"{task_uuid('abc', 'server')}.osmo-{group_uuid('abc', 'pair')}.wf-jobs.svc.cluster.local"
    assert client.command == ["nc", name, "80"] and client.environment == {"S": name}


def test_host_of_a_task_of_another_group_stays_literal_with_why():
    parsed = parse_workflow(two_groups(args=["{{host:other}}"]))
    assert parsed.warnings == [
        "groups[0].tasks[1].args[0]: {{host:other}} is left as literal text: other is in another group; OSMO "
        "substitutes {{host:<task>}} only for tasks of the same group (TaskGroupSpec.parse), and only a group's "
        "tasks run together: put other in group pair"
    ]
    assert substitute_tokens(parsed, "wf-1", "abc", "ns").tasks()[1].args == ["{{host:other}}"]


def test_host_naming_no_task_is_refused_with_field_value_and_why():
    refused(
        two_groups(command=["ping", "{{host:nosuch}}"]),
        field="groups[0].tasks[1].command[1]",
        reason="{{host:nosuch}} names no task of this workflow (tasks: client, other, server)",
    )


def test_input_tokens_stay_literal_saying_the_portal_moves_no_data():
    parsed = parse_workflow(with_task(args=["{{input:0}}/a", "{{input:prep}}"]))
    assert [w.split(": ", 1)[0] for w in parsed.warnings] == ["tasks[0].args[0]", "tasks[0].args[1]"]
    assert "OSMO puts /osmo/data/input/0, where its sidecar downloads input 0 of the task" in parsed.warnings[0]
    assert "the output of input task prep" in parsed.warnings[1] and "the portal moves no data" in parsed.warnings[1]
