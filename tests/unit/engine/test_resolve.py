"""resolve(): the pod, provenance, warnings, validation; compile_platform, check_platform, JSON round trip."""

from __future__ import annotations

import copy
import json

import pytest

from pools.engine import (
    CompiledPlatform,
    EngineError,
    NodeCapacity,
    TaskInput,
    WorkflowContext,
    check_platform,
    compile_platform,
    resolve,
)
from pools.engine.sandbox import UndefinedVariableError
from pools.engine.variables import VariableError

from .conftest import osmo_config

USER = "{{USER_CONTAINER_NAME}}"


def containers(*items, **spec):
    return {"spec": {"containers": list(items), **spec}}


def rule(operator, left, right, message="failed"):
    return {"operator": operator, "left_operand": left, "right_operand": right, "assert_message": message}


# --------------------------------------------------------------------------- the pod


def test_osmo_defaults_resolve_to_a_valid_pod(make_platform):
    result = resolve(
        make_platform(),
        TaskInput(
            "Train_Model",
            image="nvcr.io/nv/pytorch:24.01",
            command=["python"],
            args=["train.py"],
            environment={"EPOCHS": 3, "DEBUG": True},
            resources={"cpu": "1500m", "gpu": 2, "memory": "10Gi"},
        ),
        WorkflowContext(workflow_id="wf-42"),
    )
    assert result.ok, result.validation
    pod = result.pod
    assert pod["metadata"]["name"] == "wf-42-train-model"
    assert pod["metadata"]["labels"] == {
        "pool-portal/workflow": "wf-42",
        "pool-portal/task": "Train_Model",
        "pool-portal/pool": "team",
        "pool-portal/platform": "a100",
    }
    assert pod["spec"]["restartPolicy"] == "Never"
    user, ctrl = pod["spec"]["containers"]
    assert (user["name"], user["image"], user["command"], user["args"]) == (
        "train-model",
        "nvcr.io/nv/pytorch:24.01",
        ["python"],
        ["train.py"],
    )
    assert user["env"] == [{"name": "EPOCHS", "value": "3"}, {"name": "DEBUG", "value": "true"}]
    assert user["resources"]["limits"] == {
        "cpu": 1.5,
        "memory": "10Gi",
        "nvidia.com/gpu": 2,
        "ephemeral-storage": "1Gi",
    }
    assert ctrl["name"] == "osmo-ctrl" and ctrl["image"].startswith("nvcr.io/nvidia/osmo/osmo-ctrl")
    assert ctrl["resources"]["requests"] == {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}


def test_osmo_ctrl_requests_need_a_task_of_at_least_one_cpu(make_platform):
    # OSMO's default_ctrl requests 1 CPU but limits it to USER_CPU: half a CPU gives an invalid pod, said clearly.
    result = resolve(make_platform(), TaskInput("t", resources={"cpu": "500m"}))
    (violation,) = result.validation["schema"]
    assert violation["path"] == "spec.containers[1].resources.requests.cpu"
    assert "limit" in violation["reason"]
    assert not result.ok


def test_gpu_zero_means_zero_gpus(make_platform):
    platform = make_platform(pool_variables={"USER_CPU": 1, "USER_GPU": 4, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"})
    result = resolve(platform, TaskInput("cpu-job", resources={"gpu": 0}))
    assert result.pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 0
    assert result.variables["USER_GPU"] == {"value": 0, "layer": "task"}


def test_pod_name_is_deterministic_dns_1123_and_retry_aware(make_platform):
    platform = make_platform()
    name = lambda task, **ctx: resolve(platform, TaskInput(task), WorkflowContext(**ctx)).pod["metadata"]["name"]  # noqa: E731
    assert name("Step 1", workflow_id="My.Flow-7") == name("Step 1", workflow_id="My.Flow-7") == "my-flow-7-step-1"
    assert name("t", workflow_id="wf-1", retry_id=2) == "wf-1-t-r2"
    long = name("x" * 80, workflow_id="wf-1")
    assert len(long) == 63 and long != name("x" * 81, workflow_id="wf-1")


def test_workflow_labels_sit_under_system_labels(make_platform):
    ctx = WorkflowContext(labels={"team": "vision", "pool-portal/pool": "forged"})
    result = resolve(make_platform(), TaskInput("t"), ctx)
    labels = result.pod["metadata"]["labels"]
    assert (labels["team"], labels["pool-portal/pool"]) == ("vision", "team")
    assert result.provenance["metadata.labels.team"] == {"source": "task"}
    assert result.provenance['metadata.labels["pool-portal/pool"]'] == {"source": "system"}


def test_templates_cannot_change_the_pod_identity_but_add_labels(make_platform):
    sneaky = (
        "sneaky",
        {
            "apiVersion": "v2",
            "kind": "Deployment",
            "metadata": {"name": "other", "labels": {"pool-portal/task": "x", "tier": "gpu"}},
        },
    )
    result = resolve(make_platform(extra_templates=[sneaky]), TaskInput("t"))
    pod = result.pod
    assert (pod["apiVersion"], pod["kind"], pod["metadata"]["name"]) == ("v1", "Pod", "preview-1-t")
    assert pod["metadata"]["labels"]["pool-portal/task"] == "t"
    assert pod["metadata"]["labels"]["tier"] == "gpu"
    assert result.provenance["metadata.labels.tier"]["template"] == "sneaky"
    assert result.provenance["metadata.name"] == {"source": "system"}


def test_typed_substitution_in_the_pod(make_platform):
    extra = (
        "typed",
        {
            "spec": {
                "terminationGracePeriodSeconds": "{{GRACE}}",
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "kubernetes.io/hostname",
                                            "operator": "NotIn",
                                            "values": "{{USER_EXCLUDED_NODES}}",
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                },
            }
        },
    )
    platform = make_platform(extra_templates=[extra], platform_variables={"GRACE": 30})
    result = resolve(platform, TaskInput("t", resources={"nodesExcluded": "ARRAY:[node-1, node-2]"}))
    spec = result.pod["spec"]
    assert spec["terminationGracePeriodSeconds"] == 30
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["node-1", "node-2"]
    assert result.ok, result.validation
    values_path = (
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0].values[1]"
    )
    assert result.provenance[values_path] == {
        "source": "template",
        "template": "typed",
        "variables": [{"name": "USER_EXCLUDED_NODES", "layer": "task"}],
    }


# --------------------------------------------------------------------------- provenance and warnings


def test_every_leaf_has_provenance(make_platform):
    result = resolve(
        make_platform(platform_variables={"USER_MEMORY": "4Gi"}),
        TaskInput("t", command=["run"], environment={"A": "1"}, resources={"cpu": 2}),
    )
    provenance = result.provenance
    assert provenance["spec.containers[0].image"] == {"source": "task"}
    assert provenance["spec.containers[0].command[0]"] == {"source": "task"}
    assert provenance["spec.containers[0].env[0].value"] == {"source": "task"}
    assert provenance["spec.restartPolicy"] == {"source": "system"}
    assert provenance["spec.containers[0].resources.limits.cpu"] == {
        "source": "template",
        "template": "default_user",
        "variables": [{"name": "USER_CPU", "layer": "task"}],
    }
    assert provenance["spec.containers[0].resources.limits.memory"]["variables"] == [
        {"name": "USER_MEMORY", "layer": "platform"}
    ]
    assert provenance["spec.containers[1].resources.requests.cpu"] == {
        "source": "template",
        "template": "default_ctrl",
        "variables": [],
    }
    assert provenance["spec.containers[0].resources.limits.ephemeral-storage"]["variables"] == [
        {"name": "USER_STORAGE", "layer": "pool"}
    ]
    leaves = _leaf_paths(result.pod)
    assert set(provenance) == leaves


def _leaf_paths(value, path=""):
    from portal.json_paths import iter_leaves

    return {p for p, _, _ in iter_leaves(value, None, path)}


def test_a_template_overriding_a_task_value_is_a_warning(make_platform):
    env = ("env", containers({"name": USER, "env": [{"name": "MODE", "value": "platform"}]}))
    result = resolve(make_platform(extra_templates=[env]), TaskInput("t", environment={"MODE": "mine"}))
    assert result.pod["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "platform"}]
    assert "template 'env' overrides spec.containers[0].env[0].value, which the task sets" in result.warnings


def test_missing_node_inventory_is_a_warning_and_not_a_failure(make_platform):
    result = resolve(make_platform(), TaskInput("t"))
    assert result.validation["nodes"] is None
    assert "4 node rule(s) not checked: no node inventory was given" in result.warnings
    assert result.ok


def test_compile_warnings_are_repeated_on_every_resolution(make_platform):
    platform = make_platform(platform_variables={"WF_POOL": "nope"})
    result = resolve(platform, TaskInput("t"))
    assert result.variables["WF_POOL"] == {"value": "team", "layer": "system"}
    assert "default_variables.WF_POOL is ignored: the system sets WF_POOL for every task" in result.warnings


# --------------------------------------------------------------------------- validation


def test_static_rule_failures_make_the_result_not_ok(make_platform):
    result = resolve(make_platform(), TaskInput("t", resources={"cpu": 0}))
    assert not result.ok
    assert [(f["validation"], f["message"]) for f in result.validation["static"]] == [
        ("default_cpu", "Value 0 needs to be greater than 0 for CPU")
    ]


def test_node_rules_with_an_inventory(make_platform):
    nodes = [NodeCapacity("small", "4", "0", "16Gi", "100Gi"), NodeCapacity("big", "64", "8", "512Gi", "1Ti")]
    platform = make_platform()
    fits = resolve(platform, TaskInput("t", resources={"cpu": 8, "gpu": 1}), nodes=nodes)
    assert fits.ok and fits.validation["nodes"]["passing_nodes"] == ["big"]
    assert fits.validation["nodes"]["failures"]["small"]["message"] == "Value 8 too high for CPU"
    too_big = resolve(platform, TaskInput("t", resources={"gpu": 16}), nodes=nodes)
    assert not too_big.ok and too_big.validation["nodes"]["passed"] is False
    empty = resolve(platform, TaskInput("t"), nodes=[])
    assert empty.validation["nodes"]["error"] == "no nodes in platform a100 of pool team"
    assert not empty.ok


def test_schema_violations_are_reported_with_paths(make_platform):
    bad = ("bad", {"spec": {"restartPolicy": 7, "containers": [{"name": USER, "colour": "red"}]}})
    result = resolve(make_platform(extra_templates=[bad]), TaskInput("t"))
    assert not result.ok
    paths = {v["path"] for v in result.validation["schema"]}
    assert {"spec.restartPolicy", "spec.containers[0].colour"} <= paths


def test_to_dict_is_json_ready(make_platform):
    nodes = [NodeCapacity("n", "8", "1", "64Gi", "1Ti")]
    result = resolve(make_platform(), TaskInput("t", privileged=True), nodes=nodes)
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data) == {"ok", "pod", "provenance", "warnings", "variables", "validation"}
    assert set(data["validation"]) == {"ok", "static", "nodes", "gates", "schema"}
    assert data["ok"] is False and data["validation"]["gates"]


# --------------------------------------------------------------------------- bad input raises


@pytest.mark.parametrize(
    ("task", "error", "field"),
    [
        (TaskInput("t", resources={"cpu": "lots"}), VariableError, "resources.cpu"),
        (TaskInput("t", resources={"memory": "10A"}), VariableError, "resources.memory"),
        (TaskInput("t", variables={"USER_CPU": 9}), VariableError, "variables.USER_CPU"),
        (TaskInput(""), EngineError, "name"),
        (TaskInput("t", image=""), EngineError, "image"),
        (TaskInput("t", command="python x.py"), EngineError, "command"),
        (TaskInput("t", environment={"A": ["x"]}), EngineError, "environment.A"),
        (TaskInput("t", privileged="yes"), EngineError, "privileged"),
    ],
)
def test_bad_task_input_raises_with_the_field(make_platform, task, error, field):
    with pytest.raises(error) as caught:
        resolve(make_platform(), task)
    assert caught.value.field == field


def test_undefined_variable_names_variable_and_path(make_platform):
    extra = ("team", containers({"name": USER, "env": [{"name": "TEAM", "value": "{{TEAM_NAME}}"}]}))
    with pytest.raises(UndefinedVariableError) as caught:
        resolve(make_platform(extra_templates=[extra]), TaskInput("t"))
    assert caught.value.field == "spec.containers[1].env[0].value"
    assert "TEAM_NAME" in caught.value.reason
    ok = resolve(make_platform(extra_templates=[extra]), TaskInput("t", variables={"TEAM_NAME": "vision"}))
    assert ok.pod["spec"]["containers"][0]["env"] == [{"name": "TEAM", "value": "vision"}]


# --------------------------------------------------------------------------- user values are data, end to end

HOSTILE = ["{{7*7}}", '"}]', "a: b\nc: d", "ARRAY:[x]", "{{ ''.__class__ }}", "{% raw %}x{% endraw %}"]


@pytest.mark.parametrize("value", HOSTILE)
def test_user_values_reach_the_pod_as_literal_text(make_platform, value):
    extra = (
        "annotate",
        {
            "metadata": {
                "annotations": {
                    "by": "{{WF_SUBMITTED_BY}}",
                    "group": "{{WF_GROUP_NAME}}",
                    "wf": "{{WF_ID}}",
                    "extra": "x-{{EXTRA}}",
                }
            }
        },
    )
    ctx = WorkflowContext(workflow_id=value, submitted_by=value, group_name=value)
    result = resolve(
        make_platform(extra_templates=[extra]),
        TaskInput("t", command=[value], args=[value], environment={"V": value}, variables={"EXTRA": value}),
        ctx,
    )
    pod = result.pod
    # WF_SUBMITTED_BY is OSMO's label value of the submitter: no such text is one, so it renders as "" (OSMO)
    assert pod["metadata"]["annotations"] == {"by": "", "group": value, "wf": value, "extra": f"x-{value}"}
    user = pod["spec"]["containers"][0]
    assert (user["command"], user["args"], user["env"]) == ([value], [value], [{"name": "V", "value": value}])
    assert all(c.isalnum() or c in "-_." for c in pod["metadata"]["labels"]["pool-portal/workflow"])


def test_a_patch_directive_inside_a_variable_value_stays_data(make_platform):
    extra = ("annotate", {"metadata": {"annotations": "{{ANNOTATIONS}}"}})
    result = resolve(
        make_platform(extra_templates=[extra]), TaskInput("t", variables={"ANNOTATIONS": {"$patch": "delete"}})
    )
    assert result.pod["metadata"]["annotations"] == {"$patch": "delete"}


def test_resolve_does_not_mutate_the_compiled_platform(make_platform):
    platform = make_platform()
    before = copy.deepcopy(platform.to_json())
    first = resolve(platform, TaskInput("t", environment={"A": "1"}))
    first.pod["spec"]["containers"][1]["resources"]["limits"]["cpu"] = "999"
    resolve(platform, TaskInput("u", resources={"cpu": 3}))
    assert platform.to_json() == before


# --------------------------------------------------------------------------- compile_platform


@pytest.mark.parametrize(
    ("overrides", "field", "reason"),
    [
        (
            {"extra_templates": [("broken", {"spec": {"$patch": "bogus"}})]},
            "pod_template[broken].spec.$patch",
            "unknown $patch directive",
        ),
        (
            {"extra_templates": [("evil", {"spec": {"hostname": "{{ ''.__class__ }}"}})]},
            "pod_template[evil].spec.hostname",
            "private attribute",
        ),
        (
            {"extra_templates": [("typo", {"spec": {"hostname": "{{ X "}})]},
            "pod_template[typo].spec.hostname",
            "template error",
        ),
        ({"extra_rules": [("mine", [rule("BETWEEN", "1", "2")])]}, "mine[0].operator", "operator must be one of"),
        ({"pool_variables": {"USER_CPU": "many"}}, "common_default_variables.USER_CPU", "not a quantity"),
        ({"platform_variables": {"K8_CPU": 4}}, "default_variables.K8_CPU", "K8_ variables"),
        ({"allowed_mounts": ["data"]}, "allowed_mounts[0]", "absolute"),
        ({"pool": ""}, "pool", "non-empty"),
        ({"privileged_allowed": "yes"}, "privileged_allowed", "true or false"),
    ],
)
def test_compile_platform_errors_name_the_path(overrides, field, reason):
    with pytest.raises(EngineError) as caught:
        compile_platform(osmo_config(**overrides))
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_compiled_platform_exposes_osmo_computed_fields():
    gpu = (
        "gpu",
        containers(
            {"name": USER, "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]},
            {"name": "osmo-ctrl", "volumeMounts": [{"name": "x", "mountPath": "/ctrl"}]},
            nodeSelector={"nvidia.com/gpu.product": "A100"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        ),
    )
    platform = compile_platform(osmo_config(extra_templates=[gpu]))
    assert platform.node_selector == {"nvidia.com/gpu.product": "A100"}
    assert platform.tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert platform.default_mounts == ["/dev/shm"]
    assert platform.template_containers == ("osmo-ctrl",)
    assert platform.merged.sources['spec.nodeSelector["nvidia.com/gpu.product"]'] == "gpu"


def test_json_round_trip_resolves_identically(make_platform):
    platform = make_platform(extra_templates=[("gpu", {"spec": {"nodeSelector": {"gpu": "a100"}}})])
    stored = json.loads(json.dumps(platform.to_json()))
    restored = CompiledPlatform.from_json(stored)
    task = TaskInput("t", resources={"cpu": 2})
    original, again = resolve(platform, task), resolve(restored, task)
    assert (again.pod, again.provenance, again.validation) == (original.pod, original.provenance, original.validation)
    assert CompiledPlatform.from_json(json.loads(json.dumps(stored))) is restored  # cached by content
    assert restored.node_selector == {"gpu": "a100"}


def test_a_platform_stored_with_leaf_sources_before_origin_trees_restores_identically(make_platform):
    platform = make_platform(extra_templates=[("gpu", {"spec": {"nodeSelector": {"gpu": "a100"}}})])
    stored = json.loads(json.dumps(platform.to_json()))
    assert "sources" not in stored["merged"]  # stored as the origin tree: labels cover whole subtrees
    older = copy.deepcopy(stored)
    older["merged"] = {"body": stored["merged"]["body"], "sources": platform.merged.sources}
    older["fingerprint"] = "stored-with-sources"  # not the cached restore of `stored`
    restored = CompiledPlatform.from_json(older)
    assert restored.merged.sources == CompiledPlatform.from_json(stored).merged.sources == platform.merged.sources
    task = TaskInput("t", resources={"cpu": 2})
    original, again = resolve(platform, task), resolve(restored, task)
    assert (again.pod, again.provenance, again.validation) == (original.pod, original.provenance, original.validation)


def test_from_json_is_keyed_by_content(make_platform):
    stored = make_platform().to_json()
    legacy = {k: v for k, v in stored.items() if k != "fingerprint"}
    assert CompiledPlatform.from_json(legacy) is CompiledPlatform.from_json(stored)
    other = make_platform(platform_variables={"USER_GPU": 1}).to_json()
    assert other["fingerprint"] != stored["fingerprint"]
    assert CompiledPlatform.from_json(other).default_variables["USER_GPU"].value == 1


def test_from_json_rejects_other_formats():
    with pytest.raises(EngineError, match="not a compiled platform"):
        CompiledPlatform.from_json({"format": 99})


# --------------------------------------------------------------------------- check_platform


def test_osmo_defaults_pass_the_config_check(make_platform):
    assert check_platform(make_platform()) == []
    assert check_platform(make_platform(), nodes=[NodeCapacity("n", "8", "1", "64Gi", "1Ti")]) == []


def test_config_check_names_every_unknown_variable_with_its_path(make_platform):
    extra = (
        "vars",
        containers({"name": USER, "env": [{"name": "A", "value": "{{TEAM}}"}, {"name": "B", "value": "{{PROJECT}}"}]}),
    )
    errors = check_platform(make_platform(extra_templates=[extra]))
    assert [(e.field, e.value) for e in errors] == [
        ("pod_template.spec.containers[1].env[0].value", "TEAM"),
        ("pod_template.spec.containers[1].env[1].value", "PROJECT"),
    ]


def test_config_check_needs_a_valid_pod(make_platform):
    errors = check_platform(make_platform(extra_templates=[("bad", {"spec": {"dnsPolicy": 5}})]))
    assert [e.field for e in errors] == ["spec.dnsPolicy"]
    assert errors[0].reason.startswith("the resolved pod is not a valid Pod")


def test_config_check_needs_consistent_gates(make_platform):
    sneaky = ("sneaky", {"spec": {"hostNetwork": True}})
    assert [e.field for e in check_platform(make_platform(extra_templates=[sneaky]))] == ["spec.hostNetwork"]
    assert check_platform(make_platform(extra_templates=[sneaky], host_network_allowed=True)) == []


def test_config_check_needs_every_rule_to_evaluate(make_platform):
    rules = [
        (
            "mine",
            [rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}} * 0.8"), rule("GT", "{{NOPE}}", "0"), rule("EQ", "a", "b")],
        )
    ]
    errors = check_platform(make_platform(extra_rules=rules))
    assert sorted(e.field for e in errors) == ["mine[0]", "mine[1]"]  # mine[2] evaluates (and fails): fine


def test_config_check_against_the_live_inventory(make_platform):
    rules = [("big-only", [rule("GE", "{{K8_GPU}}", "16", "needs a 16-GPU node")])]
    nodes = [NodeCapacity("n1", "8", "8", "64Gi", "1Ti"), NodeCapacity("n2", "8", "4", "64Gi", "1Ti")]
    errors = check_platform(make_platform(extra_rules=rules), nodes=nodes)
    assert [(e.field, e.reason) for e in errors] == [
        ("big-only[0]", "with the default values this rule rejects every node of platform a100: needs a 16-GPU node")
    ]


# --------------------------------------------------------------------------- the benchmark scenario


def test_three_templates_two_containers_twelve_variables_four_static_rules():
    from bench.bench_engine import scenario

    platform, task, ctx = scenario()
    result = resolve(platform, task, ctx)
    assert result.ok, result.validation
    assert len(platform.config.templates) == 3 and len(result.pod["spec"]["containers"]) == 2
    assert len(platform.rules.static) == 4
    assert len(platform.config.pool_variables) + len(platform.config.platform_variables) == 12
