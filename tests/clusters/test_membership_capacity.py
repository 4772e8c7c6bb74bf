"""Membership (placement engine, affinity included), SHARED/RESERVED/UNUSED, capacity figures, `resource list`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from clusters import inventory
from clusters.models import Node
from configs import store
from configs.errors import ConfigNotFound
from pools.models import NodeMembership, Platform
from pools.services import capacity, membership, membership_reads
from tests.clusters.conftest import A100_MEMBERS, CLI, CPU_NODES, H100_NODES, running_pod
from tests.queries import assert_constant_queries


@pytest.fixture
def synced(pools_config, backend, kube_server):
    kube_server.emulator.load(
        "pods",
        [
            running_pod("w1", "h100-node-0", cpu="10", memory="100Gi", gpu=8, workload=True),
            running_pod("w2", "h100-node-1", cpu="1", memory="1Gi", gpu=2, workload=True),
            running_pod("o1", "h100-node-1", cpu="500m", memory="1Gi"),
            running_pod("c1", "cpu-node-0", cpu="31500m", memory="10Gi"),
            running_pod("done", "a100-node-0", cpu="90", gpu=8, phase="Succeeded"),
        ],
    )
    inventory.sync_backend(backend.pk)
    return backend


def members(platform: str) -> set[str]:
    return set(NodeMembership.objects.filter(platform__name=platform).values_list("node__name", flat=True))


def test_membership_follows_selectors_taints_and_cordon(synced):
    assert members("h100") == set(H100_NODES)
    assert members("any-h100") == set(H100_NODES)
    assert members("a100") == set(A100_MEMBERS)  # a100-node-2 is cordoned
    assert members("cpu") == set(CPU_NODES)
    explained = membership.explain_platform(Platform.objects.get(name="a100"))
    reasons = {row["node"]: row["reasons"] for row in explained["others"]}
    assert reasons["a100-node-2"] == [
        "node is cordoned (unschedulable)",
        "untolerated taint node.kubernetes.io/unschedulable:NoSchedule",
    ]
    assert reasons["cpu-node-0"] == [
        "node(s) didn't match nodeSelector: nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB"
        " (node has no nvidia.com/gpu.product label)"
    ]
    assert explained["members"] == A100_MEMBERS


def test_platform_without_toleration_gets_no_tainted_node(synced):
    store.apply(
        "POOL",
        "batch",
        {
            "backend": "sim",
            "platforms": {
                "cpu": {"override_pod_template": ["cpu"]},
                "h100-no-toleration": {"override_pod_template": ["h100"]},
            },
        },
        CLI,
    )
    assert members("h100-no-toleration") == set()
    explained = membership.explain_platform(Platform.objects.get(name="h100-no-toleration"))
    assert "untolerated taint nvidia.com/gpu=true:NoSchedule" in explained["others"][0]["reasons"]


def test_required_node_affinity_counts_unlike_osmo(synced):
    zone_a = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
                                ]
                            }
                        ]
                    }
                }
            }
        }
    }
    store.apply("POD_TEMPLATE", "zone-a", zone_a, CLI)
    store.apply(
        "POOL", "batch", {"backend": "sim", "platforms": {"cpu": {"override_pod_template": ["cpu", "zone-a"]}}}, CLI
    )
    # demo nodes are spread over zones by index: cpu-node-0 and cpu-node-3 are in us-east-1a
    assert members("cpu") == {"cpu-node-0", "cpu-node-3"}


def test_membership_changes_when_labels_change(synced, kube_server):
    kube_server.emulator.patch(
        "nodes", "cpu-node-2", {"metadata": {"labels": {"hive.openshift.io/machine-pool": "retired"}}}
    )
    inventory.sync_backend(synced.pk)
    assert members("cpu") == set(CPU_NODES) - {"cpu-node-2"}


def test_membership_changes_when_templates_change(synced):
    store.apply("POD_TEMPLATE", "cpu", {"spec": {"nodeSelector": {"topology.kubernetes.io/zone": "us-east-1b"}}}, CLI)
    assert members("cpu") == {"cpu-node-1"}  # the other nodes of that zone are GPU-tainted
    store.apply("POOL", "batch", {"backend": "sim", "platforms": {}}, CLI)  # platform removed
    assert not NodeMembership.objects.filter(pool__name="batch").exists()


def test_resource_types_shared_reserved_unused(synced):
    report = capacity.capacity()
    types = {node.name: node.resource_type for node in report.nodes}
    assert {types[name] for name in H100_NODES} == {"SHARED"}  # train and research
    assert {types[name] for name in [*A100_MEMBERS, *CPU_NODES]} == {"RESERVED"}
    nodes = membership_reads.filter_resource_type(Node.objects.all(), "UNUSED")
    assert "a100-node-2" in {n.name for n in nodes} and "l40-node-0" in {n.name for n in nodes}
    assert membership_reads.filter_resource_type(Node.objects.all(), "SHARED").count() == 4


def test_capacity_figures_per_pool_platform_and_total(synced):
    report = capacity.capacity(["train", "research"]).as_dict()
    train = report["pools"]["train"]
    assert train["nodes"] == 6 and train["backend"] == "sim"
    h100 = train["platforms"]["h100"]
    assert h100["nodes"] == 4
    assert h100["allocatable"] == {
        "cpu": 4 * 191_500,
        "memory": 4 * 2046 * 2**30,
        "nvidia.com/gpu": 32,
        "ephemeral-storage": 4 * 3300 * 2**30,  # local NVMe (kubesim.fleet.LOCAL_NVME)
    }
    assert h100["used"] == {"cpu": 11_500, "memory": 102 * 2**30, "nvidia.com/gpu": 10, "ephemeral-storage": 0}
    assert h100["free"]["nvidia.com/gpu"] == 22
    a100 = train["platforms"]["a100"]
    assert (a100["allocatable"]["nvidia.com/gpu"], a100["used"]["nvidia.com/gpu"]) == (16, 0)  # Succeeded pod
    assert train["allocatable"]["nvidia.com/gpu"] == 48
    assert report["pools"]["research"]["free"]["nvidia.com/gpu"] == 22
    # each node once: the 4 shared h100 nodes count once in the total of both pools
    assert report["total"]["nodes"] == 6
    assert report["total"]["allocatable"]["nvidia.com/gpu"] == 48
    assert report["total"]["free"]["nvidia.com/gpu"] == 38
    assert report["units"]["cpu"] == "millicores"


def test_free_is_never_negative_and_platform_filter(synced):
    report = capacity.capacity(["batch"], ["cpu"])
    cpu0 = next(n for n in report.nodes if n.name == "cpu-node-0")
    assert cpu0.free["cpu"] == 0 and cpu0.used["cpu"] == 31_500
    assert list(report.pools["batch"]["platforms"]) == ["cpu"]
    with pytest.raises(ConfigNotFound, match="no pool named 'ghost'"):
        capacity.capacity(["ghost"])
    with pytest.raises(ConfigNotFound, match="no platform named 'h100' in pool batch"):
        capacity.capacity(["batch"], ["h100"])


def test_resource_list_json_and_table(synced):
    out = StringIO()
    call_command("resource", "list", "--pool", "train", "--format", "json", stdout=out)
    data = json.loads(out.getvalue())
    assert set(data) == {"units", "pools", "total", "resources"}
    assert data["pools"]["train"]["platforms"]["h100"]["used"]["nvidia.com/gpu"] == 10
    row = next(r for r in data["resources"] if r["node"] == "h100-node-1")
    assert row == {
        "node": "h100-node-1",
        "backend": "sim",
        "resource_type": "SHARED",
        "gpu_product": "NVIDIA-H100-80GB-HBM3",
        "schedulable": True,
        "pools": {"research": ["any-h100"], "train": ["h100"]},
        "allocatable": {"cpu": 191_500, "memory": 2046 * 2**30, "nvidia.com/gpu": 8, "ephemeral-storage": 3300 * 2**30},
        "used": {"cpu": 1500, "memory": 2 * 2**30, "nvidia.com/gpu": 2, "ephemeral-storage": 0},
        "free": {"cpu": 190_000, "memory": 2044 * 2**30, "nvidia.com/gpu": 6, "ephemeral-storage": 3300 * 2**30},
    }
    table = StringIO()
    call_command("resource", "list", "--pool", "train", stdout=table)
    text = table.getvalue()
    assert "h100-node-0" in text and "SHARED" in text and "8/8" in text
    assert "TOTAL (6 nodes, each once)" in text


def test_capacity_query_count_is_constant(synced, backend, kube_server):
    def add_memberships():
        store.apply(
            "POOL",
            "wide",
            {"backend": "sim", "platforms": {"all": {}, "gpu": {"override_pod_template": ["gpu-toleration"]}}},
            CLI,
        )  # every untainted / every node
        assert NodeMembership.objects.count() > 40

    assert_constant_queries(capacity.capacity, grow=add_memberships)
