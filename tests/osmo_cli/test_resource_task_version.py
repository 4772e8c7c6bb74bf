"""`osmo resource info NODE`, `osmo task list [...]` and `osmo version`, played against gunicorn as OSMO's
client 6.4 sends them (NVIDIA/OSMO src/cli/resources.py `_info_resource`, src/cli/task.py `_list_tasks`,
src/cli/version.py `_client_version`), every field the CLI reads asserted, with where it reads it.

World: tests/osmo_cli/test_pool_resource_profile.py's (train = 4 h100 + 2 a100 nodes, research = the h100
nodes, batch = cpu nodes; ana holds osmo-user and osmo-train).
"""

# ruff: noqa: F811 - the fixtures imported from test_pool_resource_profile are parameters here

from __future__ import annotations

import datetime
import math

import pytest
from django.utils import timezone

from clusters.models import Node
from pools.models import Platform, Pool
from tests.clusters.conftest import backend, kube_server, pools_config  # noqa: F401 - fixtures
from tests.factories import TaskFactory, UserFactory, WorkflowFactory
from tests.osmo_cli.client import OsmoUserError
from tests.osmo_cli.test_pool_resource_profile import cli, gib, world  # noqa: F401 - fixtures

# src/lib/utils/common.py ALLOCATABLE_RESOURCES_LABELS: name and unit (memory and storage in Gi)
RESOURCE_UNITS = {"storage": "Gi", "cpu": "", "memory": "Gi", "gpu": ""}


def info_lines(answer: dict, node: str, pool: str | None = None, platform: str | None = None) -> list[str]:
    """What _info_resource prints from GET api/resources/NODE: resources[0]; without --pool the first of
    pool_platform_labels; for each key of exposed_fields that is a resource name the capacity read from
    platform_allocatable_fields[pool][platform] (common.convert_allocatable_request_fields), floored; the
    pool/platform table; config_fields[pool][platform] host_network, privileged, default_mounts,
    allowed_mounts. A KeyError prints 'Node … is not in pool …'."""
    resource = answer["resources"][0]
    try:
        if not pool:
            pool = list(resource["pool_platform_labels"].keys())[0]
            platform = resource["pool_platform_labels"][pool][0]
        lines = [f"Resource Name: {node}"]
        for key in resource["exposed_fields"]:
            if key in RESOURCE_UNITS:
                fields = resource["platform_allocatable_fields"][pool][platform]
                amount = gib(fields[key]) if RESOURCE_UNITS[key] else float(fields.get(key, 0))
                lines.append(f"{key}: {max(0, math.floor(amount))}{RESOURCE_UNITS[key]}")
        for pool_name, platforms in resource["pool_platform_labels"].items():
            lines += [f"{pool_name if index == 0 else ''}|{name}" for index, name in enumerate(platforms)]
        config = resource["config_fields"][pool][platform]
        lines += [
            f"Host Network Allowed: {config['host_network']}",
            f"Privileged Mode Allowed: {config['privileged']}",
            "Default Mounts: " + ",".join(config["default_mounts"]),
            "Allowed Mounts: " + ",".join(config["allowed_mounts"]),
        ]
        return lines
    except KeyError:
        return [f"Node {node} is not in pool {pool} and platform {platform}"]


def test_osmo_resource_info(cli):
    Platform.objects.filter(pool__name="train", name="h100").update(
        privileged_allowed=True, allowed_mounts=["/data", "/scratch"]
    )
    # src/cli/resources.py _info_resource: GET api/resources/{node_name}, no params
    answer = cli.request("GET", "api/resources/h100-node-0")
    node = Node.objects.get(name="h100-node-0")
    assert info_lines(answer, "h100-node-0") == [
        "Resource Name: h100-node-0",
        f"storage: {node.storage_allocatable // 2**30}Gi",
        f"cpu: {node.cpu_allocatable // 1000}",
        f"memory: {node.memory_allocatable // 2**30}Gi",
        "gpu: 8",
        "research|any-h100",  # every pool the node serves, whatever the caller's roles (as OSMO)
        "train|h100",
        "Host Network Allowed: False",
        "Privileged Mode Allowed: False",
        "Default Mounts: ",
        "Allowed Mounts: ",
    ]
    # `--pool train --platform h100`
    lines = info_lines(answer, "h100-node-0", "train", "h100")
    assert lines[-3:-1] == ["Privileged Mode Allowed: True", "Default Mounts: "]
    assert lines[-1] == "Allowed Mounts: /data,/scratch"
    # `--pool batch --platform cpu`: the node is not there
    assert info_lines(answer, "h100-node-0", "batch", "cpu") == [
        "Node h100-node-0 is not in pool batch and platform cpu"
    ]
    resource = answer["resources"][0]
    assert resource["hostname"] == "h100-node-0" and resource["backend"] == "sim"
    assert resource["label_fields"] == node.labels and "Ready" in resource["conditions"]
    assert resource["usage_fields"]["gpu"] == "8"  # the running 8-GPU pod


def test_osmo_resource_info_of_an_unknown_node(cli):
    # the CLI prints the 404's message (client.py handle_response), as OSMO's "Resource X does not exist!"
    with pytest.raises(OsmoUserError) as refused:
        cli.request("GET", "api/resources/ghost-node")
    assert refused.value.status_code == 404 and "no node named 'ghost-node'" in refused.value.message
    assert refused.value.payload["error_code"] == "NOTFOUND"


def test_resource_lists_carry_config_fields_label_fields_and_conditions(cli):
    answer = cli.request("GET", "api/resources", params={"pools": ["train"], "all_pools": False})
    entry = next(e for e in answer["resources"] if e["hostname"] == "a100-node-0")
    assert set(entry["config_fields"]) == {"train"} and set(entry["config_fields"]["train"]) == {"a100"}
    assert entry["config_fields"]["train"]["a100"] == {
        "host_network": False,
        "privileged": False,
        "default_mounts": [],
        "allowed_mounts": [],
    }
    assert entry["label_fields"] == Node.objects.get(name="a100-node-0").labels
    assert entry["conditions"] == ["Ready"]


def gpu_pod(gpus: int, cpu: str = "2", memory: str = "8Gi") -> dict:
    resources = {"requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus)}}
    return {"spec": {"containers": [{"name": "main", "image": "x", "resources": resources}]}}


@pytest.fixture
def tasks(world):  # noqa: F811
    """ana's two workflows in train (one running task, one finished), bo's running task in train and
    cy's in batch."""
    from django.contrib.auth import get_user_model

    train, batch = Pool.objects.get(name="train"), Pool.objects.get(name="batch")
    ana = get_user_model().objects.get(username="ana")
    started = timezone.now() - datetime.timedelta(hours=1)
    running = WorkflowFactory(pool=train, submitted_by=ana, workflow_id="train-run-1", priority="HIGH")
    TaskFactory(
        workflow=running, name="trainer", status="RUNNING", node="h100-node-1", pod=gpu_pod(4), started_at=started
    )
    done = WorkflowFactory(pool=train, submitted_by=ana, workflow_id="train-done-1")
    TaskFactory(
        workflow=done,
        name="prep",
        status="COMPLETED",
        node="h100-node-2",
        pod=gpu_pod(1),
        started_at=started - datetime.timedelta(hours=1),
        finished_at=started,
    )
    bo = WorkflowFactory(pool=train, submitted_by=UserFactory(username="bo"), workflow_id="bo-run-1")
    TaskFactory(workflow=bo, name="eval", status="WAITING", node="", pod=gpu_pod(2))
    cy = WorkflowFactory(pool=batch, submitted_by=UserFactory(username="cy"), workflow_id="cy-run-1")
    TaskFactory(workflow=cy, name="etl", status="RUNNING", node="cpu-node-0", pod=gpu_pod(0), started_at=started)


def osmo_task_list(cli, **flags) -> dict:
    """src/cli/task.py _list_tasks: the params it builds from its flags (defaults: --count 20, --offset 0,
    --status PROCESSING SCHEDULING INITIALIZING RUNNING, --order asc; no --pool → all_pools True; None and
    empty values are dropped by requests)."""
    params = {
        "limit": flags.get("count", 20),
        "offset": flags.get("offset", 0),
        "all_users": flags.get("all_users", False),
        "workflow_id": flags.get("workflow_id"),
        "nodes": flags.get("node", []),
        "statuses": flags.get("status", ["PROCESSING", "SCHEDULING", "INITIALIZING", "RUNNING"]),
        "order": flags.get("order", "asc").upper(),
    }
    if flags.get("user"):
        params["users"] = flags["user"]
    if flags.get("pool"):
        params["pools"] = flags["pool"]
    else:
        params["all_pools"] = True
    for name in ("summary", "aggregate_by_workflow", "priority", "started_after", "started_before"):
        if flags.get(name):
            params[name] = flags[name]
    return cli.request("GET", "api/task", params=params)


def task_rows(answer: dict, verbose: bool = False) -> list[list]:
    """The table _list_tasks prints: user, workflow_id, task_name, status, pool, priority, node, start_time
    (common.convert_utc_datetime_to_user_zone: strptime after replacing T), with --verbose storage, cpu,
    memory and gpu (summed with +=: numbers); None shows as '-'."""
    keys = ["user", "workflow_id", "task_name", "status", "pool", "priority", "node", "start_time"]
    if verbose:
        keys += ["storage", "cpu", "memory", "gpu"]
    rows = []
    for entry in answer["tasks"]:
        if entry["start_time"]:
            datetime.datetime.strptime(entry["start_time"].replace("T", " "), "%Y-%m-%d %H:%M:%S.%f")
        rows.append(["-" if entry.get(key) is None else entry.get(key, "-") for key in keys])
    if verbose:
        assert all(isinstance(entry[key], int | float) for entry in answer["tasks"] for key in keys[-4:])
    return rows


def test_osmo_task_list(cli, tasks):
    # the defaults: ana's own tasks that are not finished
    assert [row[:7] for row in task_rows(osmo_task_list(cli))] == [
        ["ana", "train-run-1", "trainer", "RUNNING", "train", "HIGH", "h100-node-1"],
    ]
    # --all-users: everyone's tasks in pools where ana may list workflows (osmo-user: every pool, as OSMO);
    # by start time, not started last
    rows = task_rows(osmo_task_list(cli, all_users=True), verbose=True)
    assert [row[:7] for row in rows] == [
        ["ana", "train-run-1", "trainer", "RUNNING", "train", "HIGH", "h100-node-1"],
        ["cy", "cy-run-1", "etl", "RUNNING", "batch", "NORMAL", "cpu-node-0"],
        ["bo", "bo-run-1", "eval", "SCHEDULING", "train", "NORMAL", "-"],
    ]
    assert rows[0][8:] == [0, 2, 8, 4]  # storage GiB, cpu, memory GiB, gpu
    assert rows[2][7] == "-"  # no start time
    # --status COMPLETED, --node, --workflow-id, --pool, --order desc, --count
    done = osmo_task_list(cli, status=["COMPLETED"])["tasks"]
    assert [(t["task_name"], t["status"], t["end_time"] is not None) for t in done] == [("prep", "COMPLETED", True)]
    assert osmo_task_list(cli, all_users=True, node=["h100-node-1"])["tasks"][0]["task_name"] == "trainer"
    assert [t["workflow_id"] for t in osmo_task_list(cli, all_users=True, workflow_id="bo-")["tasks"]] == ["bo-run-1"]
    assert [t["user"] for t in osmo_task_list(cli, all_users=True, pool=["batch"])["tasks"]] == ["cy"]
    assert [t["task_name"] for t in osmo_task_list(cli, all_users=True, order="desc", count=1)["tasks"]] == ["eval"]
    # --user bo, --priority HIGH
    assert [t["user"] for t in osmo_task_list(cli, user=["bo"])["tasks"]] == ["bo"]
    assert [t["task_name"] for t in osmo_task_list(cli, all_users=True, priority=["HIGH"])["tasks"]] == ["trainer"]
    # --started-after (convert_timezone: naive %Y-%m-%dT%H:%M:%S)
    tomorrow = (timezone.now() + datetime.timedelta(days=1)).strftime("%Y-%m-%dT00:00:00")
    assert osmo_task_list(cli, started_after=tomorrow)["tasks"] == []


def test_osmo_task_list_shows_others_tasks_only_where_the_policy_lets_list_them(cli, tasks, osmo_login):
    from django.contrib.auth import get_user_model

    # a token of ana's carrying osmo-train only (workflow:* on pool/train*): cy's batch task is not listed
    train_only = osmo_login(get_user_model().objects.get(username="ana"), roles=["osmo-train"])
    assert [t["user"] for t in osmo_task_list(train_only, all_users=True)["tasks"]] == ["ana", "bo"]
    assert osmo_task_list(train_only, all_users=True, pool=["batch"])["tasks"] == []


def test_osmo_task_list_summary_and_aggregate(cli, tasks):
    # --summary: summaries[] user, pool, priority and the four resources, summed with += by the CLI
    summaries = osmo_task_list(cli, all_users=True, status=["RUNNING", "SCHEDULING", "COMPLETED"], summary=True)
    assert summaries["summaries"] == [
        {"user": "ana", "pool": "train", "priority": "HIGH", "storage": 0, "cpu": 2, "memory": 8, "gpu": 4},
        {"user": "ana", "pool": "train", "priority": "NORMAL", "storage": 0, "cpu": 2, "memory": 8, "gpu": 1},
        {"user": "bo", "pool": "train", "priority": "NORMAL", "storage": 0, "cpu": 2, "memory": 8, "gpu": 2},
        {"user": "cy", "pool": "batch", "priority": "NORMAL", "storage": 0, "cpu": 2, "memory": 8, "gpu": 0},
    ]
    # --aggregate-by-workflow: the same with workflow_id
    aggregated = osmo_task_list(cli, aggregate_by_workflow=True)["summaries"]
    assert aggregated == [
        {
            "user": "ana",
            "pool": "train",
            "priority": "HIGH",
            "storage": 0,
            "cpu": 2,
            "memory": 8,
            "gpu": 4,
            "workflow_id": "train-run-1",
        },
    ]


def test_osmo_task_list_refusals_name_the_parameter(cli, tasks):
    for params, field in (({"statuses": ["SLEEPING"]}, "statuses"), ({"limit": 0}, "limit")):
        with pytest.raises(OsmoUserError) as refused:
            cli.request("GET", "api/task", params=params)
        assert refused.value.status_code == 400 and refused.value.payload["field"] == field


def test_osmo_version(cli):
    # src/cli/version.py: GET api/version (version_header=False); version.Version.from_dict needs major,
    # minor and revision (hash optional); it prints `OSMO service version: major.minor.revision[.hash]`
    answer = cli.request("GET", "api/version")
    version = ".".join([answer["major"], answer["minor"], answer["revision"]]) + (
        f".{answer['hash']}" if answer.get("hash") else ""
    )
    assert version == "0.1.0"
    assert answer["product"] == "Pool Portal"


def test_pool_configs_verbose_and_by_backend(world, osmo_user, osmo_login):
    admin = osmo_login(osmo_user("osmo-admin", username="root"))
    # GET api/configs/pool (config.py show POOL): the editable form, as before
    editable = admin.request("GET", "api/configs/pool")["pools"]
    assert set(editable) == {"train", "research", "batch"} and "status" not in editable["train"]
    # OSMO's ?verbose=true: what the service derives, per pool and per platform
    verbose = admin.request("GET", "api/configs/pool", params={"verbose": True})["pools"]
    assert verbose["train"]["status"] == "ONLINE" and verbose["train"]["parsed_group_templates"] == []
    h100 = verbose["train"]["platforms"]["h100"]
    platform = Platform.objects.get(pool__name="train", name="h100")
    assert h100["parsed_pod_template"] == platform.compiled["merged"]["body"]
    assert h100["labels"] == platform.compiled["node_selector"] and h100["tolerations"]
    assert h100["default_mounts"] == [] and isinstance(h100["parsed_resource_validations"], list)
    one = admin.request("GET", "api/configs/pool/train", params={"verbose": True})
    assert one["platforms"]["h100"]["labels"] == h100["labels"]
    # ?backend=: the pools of that backend (none of another)
    assert set(admin.request("GET", "api/configs/pool", params={"backend": "sim"})["pools"]) == set(editable)
    assert admin.request("GET", "api/configs/pool", params={"backend": "other", "verbose": True})["pools"] == {}
    with pytest.raises(OsmoUserError) as refused:
        admin.request("GET", "api/configs/pod_template", params={"verbose": True})
    assert refused.value.status_code == 400 and refused.value.payload["field"] == "verbose"
