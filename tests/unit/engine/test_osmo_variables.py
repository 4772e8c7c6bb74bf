"""OSMO's pod-template variables render the value OSMO's code gives them, and OSMO's own templates work as shipped.

Where OSMO computes them (NVIDIA/OSMO; the expected values below are worked out by hand from these lines):
- `ResourceSpec.get_allocatable_tokens`, src/utils/connectors/postgres.py (commit c7f784f9): USER_CPU =
  float(cpu), USER_GPU = int(gpu), USER_MEMORY/USER_STORAGE as written, `<X>_VAL`/`<X>_UNIT` split by
  RESOURCE_REGEX, `<X>_<unit>` for every unit of MEASUREMENTS_SHORT {Ti, Gi, Mi, Ki, B, m} by
  convert_resource_value_str, USER_EXCLUDED_NODES = "ARRAY:[a,b]", and USER_CACHE = floor(storage number x 0.9)
  in the storage's unit when the task gives no cacheSize ("If no cache size was specified, use 90% of the
  storage amount").
- src/lib/utils/common.py (commit 10f7cfa0): MEASUREMENTS gives each unit a power of two against GiB
  (Ti 10, Gi 0, Mi -10, Ki -20, B -30, m -40) and convert_resource_value_str returns num x 2^(unit - target):
  so `m` is 2^-10 of a byte and `<X>_m` = bytes x 1024.
- src/utils/job/task.py (commit 00a20f3e): `TaskGroup.convert_to_pod_spec` adds USER_CONTAINER_NAME and the
  variables `_convert_labels_to_variables` makes of the pod's `osmo.*` labels (`_labels`, `_task_labels`):
  WF_ID, WF_UUID, WF_GROUP_NAME, WF_GROUP_UUID, WF_SUBMITTED_BY, WF_TASK_NAME, WF_TASK_UUID, WF_RETRY_ID
  (str(retry_id)), WF_LEAD_CONTAINER ('true', the lead task only), WF_POOL, WF_PLATFORM, WF_PRIORITY; then
  `substitute_pod_template_tokens` renders every string with them (its output is always text).
  `_task_labels` sets `labels['osmo.priority'] = priority.value.lower()`, and `_labels` sets
  `osmo.submitted_by` only to a valid label value: the user if it matches
  `^[a-zA-Z0-9][A-Za-z0-9-_.]{0,61}[a-zA-Z0-9]$`, else an e-mail's local part if that matches, else no label
  (so WF_SUBMITTED_BY is undefined and renders as "").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pools.engine import EngineError, TaskInput, WorkflowContext, compile_platform, resolve
from pools.engine.defaults import OSMO_CTRL_IMAGE, OSMO_DEFAULT_TEMPLATES, default_templates
from pools.engine.resolve import check_platform
from pools.engine.variables import build_variables, cache_size, check_variable_names, variable_values
from tests.unit.engine.conftest import osmo_config

OSMO_FIXTURES = Path(__file__).parents[2] / "fixtures" / "osmo"
OSMO_TEMPLATES = json.loads((OSMO_FIXTURES / "default_pod_templates.json").read_text())
TASK_RESOURCES = {"cpu": 8, "gpu": 2, "memory": "10Gi", "storage": "100Gi", "nodesExcluded": ["n1", "n2"]}
GI = 2**30

# OSMO's value of each variable for TASK_RESOURCES (task "train" of group "train-group", retry 0, lead)
OSMO_VALUES = {
    "USER_CPU": 8.0,
    "USER_GPU": 2,
    "USER_MEMORY": "10Gi",
    "USER_STORAGE": "100Gi",
    "USER_MEMORY_VAL": "10",
    "USER_MEMORY_UNIT": "Gi",
    "USER_MEMORY_B": 10.0 * GI,
    "USER_MEMORY_Ki": 10.0 * 2**20,
    "USER_MEMORY_Mi": 10240.0,
    "USER_MEMORY_Gi": 10.0,
    "USER_MEMORY_Ti": 10 / 1024,
    "USER_MEMORY_m": 10.0 * 2**40,
    "USER_STORAGE_VAL": "100",
    "USER_STORAGE_UNIT": "Gi",
    "USER_STORAGE_B": 100.0 * GI,
    "USER_STORAGE_Ki": 100.0 * 2**20,
    "USER_STORAGE_Mi": 102400.0,
    "USER_STORAGE_Gi": 100.0,
    "USER_STORAGE_Ti": 100 / 1024,
    "USER_STORAGE_m": 100.0 * 2**40,
    "USER_CACHE": "90Gi",
    "USER_CONTAINER_NAME": "train",
    "WF_ID": "wf-7",
    "WF_GROUP_NAME": "train-group",
    "WF_TASK_NAME": "train",
    "WF_RETRY_ID": "0",
    "WF_LEAD_CONTAINER": "true",
    "WF_POOL": "team",
    "WF_PLATFORM": "a100",
    "WF_SUBMITTED_BY": "alice",
    "WF_PRIORITY": "high",  # task.py _task_labels: priority.value.lower()
}
HEX_32 = re.compile(r"[0-9a-f]{32}")


def _all_variables_template() -> dict:
    """Every OSMO variable in an env value of the task's container: a string field, as OSMO renders them all."""
    names = [*OSMO_VALUES, "WF_UUID", "WF_TASK_UUID", "WF_GROUP_UUID"]
    env = [{"name": name, "value": "{{" + name + "}}"} for name in names]
    return {"spec": {"containers": [{"name": "{{USER_CONTAINER_NAME}}", "env": env}]}}


def _resolve_all(**task):
    compiled = compile_platform(osmo_config(extra_templates=[("all", _all_variables_template())]))
    ctx = WorkflowContext(
        workflow_id="wf-7", submitted_by="alice", priority="HIGH", control_image="registry.example/ctrl:1"
    )
    result = resolve(compiled, TaskInput("train", resources=TASK_RESOURCES, lead=True, **task), ctx)
    user = next(c for c in result.pod["spec"]["containers"] if c["name"] == "train")
    return result, {item["name"]: item["value"] for item in user["env"]}


def _same(portal: str, osmo: object) -> bool:
    """The portal writes typed numbers (8, 10240); OSMO writes Python's str() of its floats (8.0, 10240.0)."""
    if isinstance(osmo, float):
        return float(portal) == osmo
    return portal == str(osmo)


@pytest.mark.parametrize("name", sorted(OSMO_VALUES))
def test_each_osmo_variable_renders_osmos_value(name):
    result, env = _resolve_all()
    assert result.ok, result.validation
    assert _same(env[name], OSMO_VALUES[name]), (name, env[name], OSMO_VALUES[name])


def test_uuids_and_excluded_nodes_have_osmos_shape():
    _, env = _resolve_all()
    for name in ("WF_UUID", "WF_TASK_UUID", "WF_GROUP_UUID"):  # uuid4().hex in OSMO, 32 hex digits
        assert HEX_32.fullmatch(env[name]), (name, env[name])
    assert len({env["WF_UUID"], env["WF_TASK_UUID"], env["WF_GROUP_UUID"]}) == 3


def test_excluded_nodes_render_as_the_list_osmo_makes_of_its_array_string():
    """OSMO renders "ARRAY:[n1,n2]" and `substitute_pod_template_tokens` splits it into ['n1', 'n2']."""
    expression = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": "{{USER_EXCLUDED_NODES}}"}
    term = {"matchExpressions": [expression]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    compiled = compile_platform(osmo_config(extra_templates=[("avoid", {"spec": {"affinity": affinity}})]))
    result = resolve(compiled, TaskInput("train", resources=TASK_RESOURCES))
    assert result.ok, result.validation
    rendered = result.pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert rendered["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == "ARRAY:[n1,n2]"[7:-1].split(",")


def test_group_uuid_is_one_per_group_and_stable():
    ctx = WorkflowContext(workflow_id="wf-7", group_name="g")
    compiled = compile_platform(osmo_config(extra_templates=[("u", _label_template("WF_GROUP_UUID"))]))
    first, second = (resolve(compiled, TaskInput(name), ctx) for name in ("a", "b"))
    labels = [r.pod["metadata"]["labels"]["group"] for r in (first, second)]
    assert labels[0] == labels[1]
    other = resolve(compiled, TaskInput("a"), WorkflowContext(workflow_id="wf-7", group_name="h"))
    assert other.pod["metadata"]["labels"]["group"] != labels[0]


def _label_template(name: str) -> dict:
    return {"metadata": {"labels": {"group": "{{" + name + "}}"}}}


@pytest.mark.parametrize(
    ("user", "osmo"),
    [
        ("alice", "alice"),
        ("alice@example.com", "alice"),  # an e-mail: its local part, which is a valid label
        ("a.b_c-d", "a.b_c-d"),
        ("x" * 63, "x" * 63),
        ("x" * 64, ""),  # too long for a label, no "@": OSMO sets no label
        ("-alice@example.com", ""),  # the local part is no valid label either
        ("a", ""),  # OSMO's pattern needs two characters
        ("ana maria", ""),
    ],
)
def test_submitted_by_is_the_label_value_osmo_makes_of_the_user(user, osmo):
    """task.py `_labels`: `osmo.submitted_by` only when it is a valid label value (an e-mail's local part)."""
    compiled = compile_platform(osmo_config(extra_templates=[("who", _label_template("WF_SUBMITTED_BY"))]))
    result = resolve(compiled, TaskInput("train"), WorkflowContext(workflow_id="wf-7", submitted_by=user))
    assert result.ok, result.validation  # a label OSMO's templates write from it is a valid label
    assert result.pod["metadata"]["labels"]["group"] == osmo


@pytest.mark.parametrize(("priority", "osmo"), [("HIGH", "high"), ("NORMAL", "normal"), ("LOW", "low")])
def test_priority_is_lowercase_as_osmos_label(priority, osmo):
    """task.py `_task_labels`: `osmo.priority` = priority.value.lower(), so `priorityClassName: osmo-{{WF_PRIORITY}}`
    names OSMO's lowercase priority classes and is a valid name."""
    template = {"spec": {"priorityClassName": "osmo-{{WF_PRIORITY}}"}}
    compiled = compile_platform(osmo_config(extra_templates=[("prio", template)]))
    result = resolve(compiled, TaskInput("train"), WorkflowContext(workflow_id="wf-7", priority=priority))
    assert result.ok, result.validation
    assert result.pod["spec"]["priorityClassName"] == f"osmo-{osmo}"


def test_lead_container_is_true_for_the_lead_and_empty_otherwise():  # an undefined name renders "" in OSMO
    assert _resolve_all()[1]["WF_LEAD_CONTAINER"] == "true"
    compiled = compile_platform(osmo_config(extra_templates=[("all", _all_variables_template())]))
    result = resolve(compiled, TaskInput("train", resources=TASK_RESOURCES), WorkflowContext(workflow_id="wf-7"))
    env = {item["name"]: item["value"] for item in result.pod["spec"]["containers"][0]["env"]}
    assert env["WF_LEAD_CONTAINER"] == ""


@pytest.mark.parametrize(
    ("storage", "cache"),
    [
        ("100Gi", "90Gi"),  # floor(100 x 0.9) Gi
        ("1.5Gi", "1Gi"),  # floor(1.35)
        ("1Gi", "0Gi"),  # floor(0.9)
        ("500Mi", "450Mi"),
        ("10", "9"),  # no unit: bytes (OSMO spells the unit B)
        ("1e3", "900"),  # an exponent has no unit to keep: 0.9 x the bytes
    ],
)
def test_user_cache_is_floor_of_nine_tenths_of_storage_in_its_unit(storage, cache):
    assert cache_size(storage) == cache
    assert variable_values(build_variables(resources={"storage": storage}))["USER_CACHE"] == cache


def test_user_cache_follows_the_effective_storage_and_its_layer():
    variables = build_variables(pool_variables={"USER_STORAGE": "20Gi"})
    assert (variables["USER_CACHE"].value, variables["USER_CACHE"].layer) == ("18Gi", "pool")
    assert "USER_CACHE" not in build_variables()


@pytest.mark.parametrize(
    ("memory", "expected"), [("1Ki", 1024 * 1024), ("10Gi", 10 * 2**40), ("1.5Mi", int(1.5 * 2**20 * 1024))]
)
def test_m_variants_are_bytes_times_1024_as_osmo_converts_them(memory, expected):
    result = variable_values(build_variables(resources={"memory": memory, "storage": memory}))
    assert result["USER_MEMORY_m"] == result["USER_STORAGE_m"] == expected


@pytest.mark.parametrize("name", ["USER_CACHE", "USER_MEMORY_m", "WF_GROUP_UUID", "WF_LEAD_CONTAINER"])
def test_new_names_are_the_systems(name):
    with pytest.raises(EngineError, match="set by the system"):
        build_variables(task_variables={name: "x"})


def test_admins_are_told_the_system_sets_the_new_workflow_names():
    warnings = check_variable_names({"WF_GROUP_UUID": "x", "WF_LEAD_CONTAINER": "y"}, "default_variables")
    assert len(warnings) == 2


# --------------------------------------------------------------------------- OSMO's string forms


@pytest.mark.parametrize(
    ("pool_variables", "cpu", "gpu", "memory"),
    [
        ({"USER_CPU": "8.0", "USER_GPU": "1.0", "USER_MEMORY": "1.5Gi", "USER_STORAGE": "10Gi"}, 8, 1, "1.5Gi"),
        ({"USER_CPU": "1.5", "USER_GPU": "0", "USER_MEMORY": "2Gi", "USER_STORAGE": "10Gi"}, 1.5, 0, "2Gi"),
        ({"USER_CPU": 8.0, "USER_GPU": 2.0, "USER_MEMORY": "4Gi", "USER_STORAGE": "10Gi"}, 8, 2, "4Gi"),
    ],
)
def test_osmo_string_forms_of_default_variables_keep_the_portals_types(pool_variables, cpu, gpu, memory):
    compiled = compile_platform(osmo_config(pool_variables=pool_variables))
    assert check_platform(compiled) == []
    result = resolve(compiled, TaskInput("train"))
    assert result.ok, result.validation
    user = result.pod["spec"]["containers"][0]["resources"]["limits"]
    assert (user["cpu"], user["nvidia.com/gpu"], user["memory"]) == (cpu, gpu, memory)
    assert type(user["cpu"]) is type(cpu) and type(user["nvidia.com/gpu"]) is int


@pytest.mark.parametrize(("cpu", "gpu", "memory"), [("8.0", "2.0", "10Gi"), ("1.5", "1", "1.5Gi"), ("4", 1.0, "8Gi")])
def test_osmo_string_forms_of_task_resources(cpu, gpu, memory):
    compiled = compile_platform(osmo_config())
    result = resolve(compiled, TaskInput("train", resources={"cpu": cpu, "gpu": gpu, "memory": memory}))
    assert result.ok, result.validation
    assert result.variables["USER_CPU"]["value"] == float(cpu)
    assert result.variables["USER_GPU"]["value"] == int(float(gpu))


def test_osmo_string_quantities_written_in_a_template():
    """OSMO renders "{{USER_CPU}}" as "8.0": a template that writes the quantity as that text is a valid Pod."""
    written = {"spec": {"containers": [{"name": "{{USER_CONTAINER_NAME}}", "resources": {"limits": {"cpu": "8.0"}}}]}}
    compiled = compile_platform(osmo_config(extra_templates=[("written", written)]))
    result = resolve(compiled, TaskInput("train", resources={"cpu": 8}))
    assert result.ok, result.validation
    assert result.pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "8.0"


def test_fractional_gpus_are_still_refused_clearly():
    with pytest.raises(EngineError, match="GPUs are whole devices"):
        build_variables(pool_variables={"USER_GPU": "1.5"})


# --------------------------------------------------------------------------- OSMO's templates as shipped


def test_the_engines_defaults_are_osmos_as_shipped():
    assert default_templates() == OSMO_TEMPLATES == dict(OSMO_DEFAULT_TEMPLATES)
    assert "image" not in OSMO_TEMPLATES["default_ctrl"]["spec"]["containers"][0]


def test_the_control_container_gets_the_contexts_image_and_says_where_from():
    compiled = compile_platform(osmo_config())
    assert check_platform(compiled) == []
    ctx = WorkflowContext(control_image="registry.example/ctrl:2", control_image_source="backend gpu's control_image")
    result = resolve(compiled, TaskInput("train", image="nvcr.io/x:1"), ctx)
    assert result.ok, result.validation
    containers = {c["name"]: c for c in result.pod["spec"]["containers"]}
    assert containers["osmo-ctrl"]["image"] == "registry.example/ctrl:2"
    assert containers["train"]["image"] == "nvcr.io/x:1"
    index = [c["name"] for c in result.pod["spec"]["containers"]].index("osmo-ctrl")
    provenance = result.provenance
    assert provenance[f"spec.containers[{index}].image"] == {
        "source": "system",
        "setting": "backend gpu's control_image",
    }
    assert provenance[f"spec.containers[{index}].resources.requests.cpu"]["template"] == "default_ctrl"


def test_without_a_context_the_control_image_is_osmos_default():
    result = resolve(compile_platform(osmo_config()), TaskInput("train"))
    assert result.ok
    assert [c["image"] for c in result.pod["spec"]["containers"]] == ["ubuntu:24.04", OSMO_CTRL_IMAGE]


def test_a_template_that_names_the_control_image_keeps_it():
    named = {"spec": {"containers": [{"name": "osmo-ctrl", "image": "mine/ctrl:3"}]}}
    compiled = compile_platform(osmo_config(extra_templates=[("named", named)]))
    result = resolve(compiled, TaskInput("train"), WorkflowContext(control_image="other/ctrl:1"))
    assert result.ok
    assert result.pod["spec"]["containers"][1]["image"] == "mine/ctrl:3"
    assert result.provenance["spec.containers[1].image"]["template"] == "named"


def test_the_control_image_stays_the_platforms():
    """Filled in, it is the template's as far as the gates go: nothing else may change it."""
    compiled = compile_platform(osmo_config())
    result = resolve(compiled, TaskInput("train"), WorkflowContext(control_image="registry.example/ctrl:2"))
    assert result.ok and not result.validation["gates"]


def test_a_user_container_without_an_image_is_still_refused():
    with pytest.raises(EngineError) as caught:
        resolve(compile_platform(osmo_config()), TaskInput("train", image=""))
    assert (caught.value.field, caught.value.reason) == ("image", "a task needs an image")


def test_another_template_container_without_an_image_is_still_refused_at_save():
    sidecar = {"spec": {"containers": [{"name": "sidecar", "command": ["sleep"]}]}}
    problems = check_platform(compile_platform(osmo_config(extra_templates=[("side", sidecar)])))
    assert [(p.field, p.reason) for p in problems] == [
        ("spec.containers[2].image", "the resolved pod is not a valid Pod: image is required")
    ]
