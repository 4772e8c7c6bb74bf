"""`GET /api/resources`, `/api/pool` and `/api/pool_quota` in the shapes `osmo resource list` and `osmo pool list`
read (NVIDIA/OSMO src/cli/resources.py, src/cli/pool.py), over DRF's test client. The same requests against
a live server: tests/osmo_cli/test_pool_resource_profile.py.

World (tests/clusters/conftest.py): train = 4 h100 nodes + 2 a100 nodes (8 GPUs each), research = the 4 h100
nodes; a running 8-GPU pod on h100-node-0.
"""

from __future__ import annotations

import re

import pytest

from clusters import inventory
from clusters.models import Node
from configs import store
from pools.models import Pool
from tests.clusters.conftest import CLI, H100_NODES, running_pod
from tests.factories import PoolFactory, TaskFactory, WorkflowFactory
from tests.queries import assert_constant_queries

GIB = 2**30
UNIT_POWERS = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "K": 1, "M": 2, "G": 3, "T": 4}  # OSMO reads G as Gi


def osmo_gib(text: str) -> float:
    """A memory or storage field as OSMO's client reads it: `<number><unit>`, no unit = bytes, in GiB."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-zA-Z]*)", text)
    assert match, f"OSMO's client cannot parse {text!r}"
    number, unit = float(match[1]), match[2] or "B"
    return number * 1024 ** UNIT_POWERS.get(unit, 0) / GIB


@pytest.fixture
def synced(pools_config, backend, kube_server):
    kube_server.emulator.load("pods", [running_pod("w", "h100-node-0", gpu=8, workload=True)])
    inventory.sync_backend(backend.pk)
    return backend


def gpu_pod(gpus: int) -> dict:
    return {"spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def test_resources_answer_carries_the_fields_osmo_resource_list_reads(admin_api, synced):
    # the CLI's params: {'pools': [...], 'all_pools': False}, as requests encodes them
    response = admin_api.get("/api/resources?pools=research&all_pools=False")
    assert response.status_code == 200, response.content[:300]
    resources = {entry["exposed_fields"]["node"]: entry for entry in response.json()["resources"]}
    assert set(resources) == set(H100_NODES)
    node = Node.objects.get(name="h100-node-0")
    entry = resources["h100-node-0"]
    # only the pools asked for, as OSMO: `pool/platform` drives the CLI's rows
    assert entry["exposed_fields"]["pool/platform"] == ["research/any-h100"]
    assert entry["pool_platform_labels"] == {"research": ["any-h100"]}
    assert entry["resource_type"] == "SHARED"  # the node serves train too
    assert entry["hostname"] == "h100-node-0"
    for fields in (entry["allocatable_fields"], entry["usage_fields"]):
        assert list(fields) == ["storage", "cpu", "memory", "gpu"]
    allocatable, usage = entry["allocatable_fields"], entry["usage_fields"]
    assert float(allocatable["gpu"]) == node.gpu_allocatable == 8
    assert float(usage["gpu"]) == 8
    assert float(allocatable["cpu"]) == node.cpu_allocatable / 1000
    assert osmo_gib(allocatable["memory"]) == node.memory_allocatable / GIB
    assert osmo_gib(allocatable["storage"]) == node.storage_allocatable / GIB
    assert osmo_gib(usage["memory"]) == node.memory_used / GIB
    assert entry["platform_allocatable_fields"] == {"research": {"any-h100": allocatable}}
    assert entry["exposed_fields"]["gpu"] == "8"
    assert entry["exposed_fields"]["memory"] == str(node.memory_allocatable // GIB)
    # the portal's own fields are still there
    assert entry["node"] == "h100-node-0" and entry["used"]["nvidia.com/gpu"] == 8


def test_resources_all_pools_and_bad_flags(admin_api, synced):
    every = admin_api.get("/api/resources?pools=research&all_pools=True").json()
    pairs = {pair for entry in every["resources"] for pair in entry["exposed_fields"]["pool/platform"]}
    assert {"train/h100", "train/a100", "research/any-h100", "batch/cpu"} <= pairs
    response = admin_api.get("/api/resources?pools=research&all_pools=maybe")
    assert response.status_code == 400
    assert (response.json()["field"], response.json()["value"]) == ("all_pools", "maybe")


def test_pool_list_names_pools_as_osmo_resource_list_checks_them(admin_api, synced):
    # `osmo resource list` checks its pools against GET /api/pool's `pools` keys
    assert set(admin_api.get("/api/pool?all_pools=true").json()["pools"]) == {"train", "research", "batch"}
    assert set(admin_api.get("/api/pool?pools=train&pools=ghost").json()["pools"]) == {"train"}


def test_pool_quota_groups_node_sets_and_counts_running_gpus(admin_api, synced):
    store.apply(
        "POOL",
        "research-b",
        {
            "backend": "sim",
            "common_pod_template": ["gpu-toleration"],
            "platforms": {"h100": {"override_pod_template": ["h100"]}},
            "resources": {"gpu": {"guarantee": 12}},
        },
        CLI,
    )
    train = Pool.objects.get(name="train")
    for priority, gpus in (("NORMAL", 4), ("HIGH", 2), ("LOW", 1)):
        TaskFactory(workflow=WorkflowFactory(pool=train, priority=priority), status="RUNNING", pod=gpu_pod(gpus))
    TaskFactory(workflow=WorkflowFactory(pool=train), status="COMPLETED", pod=gpu_pod(8))

    response = admin_api.get("/api/pool_quota?all_pools=true")
    assert response.status_code == 200
    data = response.json()
    sets = [[pool["name"] for pool in node_set["pools"]] for node_set in data["node_sets"]]
    assert sets == [["batch"], ["research", "research-b"], ["train"]]
    pools = {pool["name"]: pool for node_set in data["node_sets"] for pool in node_set["pools"]}
    assert pools["train"]["resource_usage"] == {
        "quota_used": "6",  # HIGH and NORMAL
        "quota_free": "42",
        "quota_limit": "48",  # no guarantee: the capacity
        "total_usage": "7",
        "total_capacity": "48",
        "total_free": "40",  # the 8-GPU pod on h100-node-0
    }
    assert pools["research-b"]["resource_usage"]["quota_limit"] == "12"
    assert pools["research-b"]["resource_usage"]["total_capacity"] == "32"
    assert {key: pools["research"][key] for key in ("description", "status")} == {"description": "", "status": "ONLINE"}
    assert data["resource_sum"] == {
        "quota_used": "6",
        "quota_free": str(42 + 32 + 12 + 0),
        "quota_limit": str(48 + 32 + 12 + 0),
        "total_usage": "7",
        "total_capacity": "48",  # each node once
        "total_free": "40",
    }


def test_pool_quota_pools_param_and_default(admin_api, client, synced):
    # `osmo pool list -p train ghost`: params {'pools': [...]}; an unknown name is left out (the CLI says so)
    named = admin_api.get("/api/pool_quota?pools=train&pools=ghost").json()
    assert [pool["name"] for node_set in named["node_sets"] for pool in node_set["pools"]] == ["train"]
    assert admin_api.get("/api/pool_quota?pools=ghost").json()["node_sets"] == []
    assert client.get("/api/pool_quota").status_code in (401, 403)


def test_pool_quota_queries_are_constant(admin_api, synced):
    def grow():
        for index in range(5):
            pool = PoolFactory(name=f"grown-{index}", backend=synced)
            TaskFactory(workflow=WorkflowFactory(pool=pool), status="RUNNING", pod=gpu_pod(1))

    assert_constant_queries(lambda: admin_api.get("/api/pool_quota?all_pools=true"), grow=grow)


def test_resources_queries_are_constant(admin_api, synced):
    # config_fields, label_fields and conditions cost one query whatever the number of nodes and platforms
    def grow():
        store.apply(
            "POOL",
            "train-b",
            {"backend": "sim", "common_pod_template": ["gpu-toleration"], "platforms": {"a100": {}, "h100": {}}},
            CLI,
        )

    assert_constant_queries(lambda: admin_api.get("/api/resources?all_pools=true"), grow=grow)


def test_resource_info_answers_every_pool_of_the_node(admin_api, synced):
    response = admin_api.get("/api/resources/h100-node-0")
    assert response.status_code == 200
    (entry,) = response.json()["resources"]
    assert entry["pool_platform_labels"] == {"research": ["any-h100"], "train": ["h100"]}
    assert set(entry["config_fields"]) == {"research", "train"}
    missing = admin_api.get("/api/resources/ghost")
    assert missing.status_code == 404 and missing.json()["code"] == "node_not_found"


def test_verbose_pool_configs_queries_are_constant(admin_api, synced):
    def grow():
        for index in range(3):
            store.apply("POOL", f"grown-{index}", {"backend": "sim", "platforms": {"cpu": {}, "gpu": {}}}, CLI)

    assert_constant_queries(lambda: admin_api.get("/api/configs/pool?verbose=true"), grow=grow)
    assert admin_api.get("/api/configs/pool?backend=sim&verbose=true").json()["pools"]["grown-0"]["status"] == "ONLINE"
