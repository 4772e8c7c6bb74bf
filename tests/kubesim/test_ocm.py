"""kubesim serves the OpenShift Cluster Manager machine-pools API (clusters_mgmt v1) beside the Kubernetes API,
with OCM's field names, bearer tokens and error bodies, and Karpenter's NodePools as a cluster with Karpenter
installed does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests
from kubernetes import client

from kubesim import EmulatorServer
from tests.kubesim.conftest import kube_api_client
from tests.polling import PATIENCE

CLUSTER, TOKEN = "2a3b4c5d6e7f", "ocm-token"


@pytest.fixture
def ocm() -> Iterator[tuple[EmulatorServer, requests.Session, str]]:
    with EmulatorServer(host="127.0.0.1", port=0) as server:
        server.emulator.ocm_add_cluster(CLUSTER, token=TOKEN)
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {TOKEN}"
        yield server, session, f"{server.url}/api/clusters_mgmt/v1/clusters/{CLUSTER}/machine_pools"
        session.close()
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


GPU_SPOT = {
    "id": "ml-training",
    "instance_type": "g4dn.xlarge",
    "autoscaling": {"min_replicas": 0, "max_replicas": 3},
    "labels": {"workload": "ml"},
    "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
    "aws": {"spot_market_options": {"max_price": 0.5}},
    "root_volume": {"aws": {"size": 200}},
}


def test_machine_pools_are_created_listed_read_patched_and_deleted(ocm):
    server, session, url = ocm
    created = session.post(url, json=GPU_SPOT)
    assert created.status_code == 201
    body = created.json()
    assert body["kind"] == "MachinePool" and body["href"].endswith(f"/clusters/{CLUSTER}/machine_pools/ml-training")
    assert body["status"]["current_replicas"] == 0 and body["aws"] == {"spot_market_options": {"max_price": 0.5}}
    listed = session.get(url).json()
    assert listed["kind"] == "MachinePoolList" and [p["id"] for p in listed["items"]] == ["ml-training", "worker"]
    assert server.emulator.ocm_machine_pools[CLUSTER]["ml-training"]["instance_type"] == "g4dn.xlarge"

    patched = session.patch(f"{url}/ml-training", json={"replicas": 2, "labels": {"workload": "batch"}})
    assert patched.status_code == 200
    assert patched.json()["replicas"] == 2 and "autoscaling" not in patched.json()
    assert session.get(f"{url}/ml-training").json()["labels"] == {"workload": "batch"}

    assert session.delete(f"{url}/ml-training").status_code == 204
    assert session.get(f"{url}/ml-training").status_code == 404
    assert server.emulator.ocm_pool(CLUSTER, "ml-training") is None


def test_ocm_refusals_carry_its_error_body(ocm):
    server, session, url = ocm
    session.post(url, json=GPU_SPOT)
    duplicate = session.post(url, json=GPU_SPOT)
    assert duplicate.status_code == 409
    assert duplicate.json() | {"operation_id": ""} == {
        "kind": "Error",
        "id": "409",
        "href": "/api/clusters_mgmt/v1/errors/409",
        "code": "CLUSTERS-MGMT-409",
        "reason": f"Machine pool with id 'ml-training' already exists for cluster '{CLUSTER}'",
        "operation_id": "",
    }
    changed = session.patch(f"{url}/ml-training", json={"instance_type": "g5.xlarge"})
    assert changed.status_code == 400 and changed.json()["code"] == "CLUSTERS-MGMT-400"
    assert "'instance_type' cannot be changed" in changed.json()["reason"]
    both = session.post(url, json={**GPU_SPOT, "id": "y", "replicas": 1})
    assert both.status_code == 400 and "cannot be used together" in both.json()["reason"]
    bad_taint = {**GPU_SPOT, "id": "z", "taints": [{"key": "a", "value": "b", "effect": "Sometimes"}]}
    assert session.post(url, json=bad_taint).status_code == 400
    assert session.get(f"{url}/nope").json()["reason"] == f"Machine pool 'nope' not found for cluster '{CLUSTER}'"
    other = url.replace(CLUSTER, "unknown")
    assert (
        session.get(other).status_code == 404 and session.get(other).json()["reason"] == "Cluster 'unknown' not found"
    )


def test_a_bearer_token_is_required(ocm):
    server, _, url = ocm
    assert requests.get(url).status_code == 401
    wrong = requests.get(url, headers={"Authorization": "Bearer stolen"})
    assert wrong.status_code == 401 and wrong.json()["code"] == "CLUSTERS-MGMT-401"


def test_an_outage_answers_503_until_it_ends(ocm):
    server, session, url = ocm
    server.emulator.ocm_fail_next(503, times=2)
    assert [session.get(url).status_code for _ in range(3)] == [503, 503, 200]
    server.emulator.ocm_fail_next(503, times=None)
    assert session.get(url).json()["code"] == "CLUSTERS-MGMT-503"
    server.emulator.ocm_clear_failures()
    assert session.get(url).status_code == 200


def test_karpenter_nodepools_are_served_cluster_scoped():
    with EmulatorServer(host="127.0.0.1", port=0) as server, kube_api_client(server.url) as api:
        custom = client.CustomObjectsApi(api)
        pool = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "gpu", "labels": {"app.kubernetes.io/managed-by": "pool-portal"}},
            "spec": {"template": {"spec": {"requirements": []}}, "limits": {"nodes": "3"}},
        }
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
        listed = custom.list_cluster_custom_object(
            "karpenter.sh", "v1", "nodepools", label_selector="app.kubernetes.io/managed-by=pool-portal"
        )
        assert [p["metadata"]["name"] for p in listed["items"]] == ["gpu"]
        assert server.emulator.get("karpenter.sh/nodepools", "gpu")["spec"]["limits"] == {"nodes": "3"}


def test_the_command_line_serves_ocm_clusters():
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", "0", "--ocm-cluster", f"{CLUSTER}:{TOKEN}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        answer = requests.get(
            f"{url}/api/clusters_mgmt/v1/clusters/{CLUSTER}/machine_pools",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=PATIENCE,
        )
        assert [pool["id"] for pool in answer.json()["items"]] == ["worker"]
    finally:
        process.terminate()
        process.wait(10)


def test_a_machine_pool_over_the_node_cap_is_refused_like_ocm_and_nothing_changes(ocm):
    """Issue #31 item 3: kubesim protects itself as OCM does, per machine pool (500 nodes, ROSA HCP's most)."""
    server, session, url = ocm
    for body in ({**GPU_SPOT, "autoscaling": {"min_replicas": 0, "max_replicas": 10**9}}, {**GPU_SPOT, "id": "x"}):
        body = {key: value for key, value in body.items() if key != "autoscaling"} | {"replicas": 501}
        refused = session.post(url, json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json() | {"operation_id": ""} == {
            "kind": "Error",
            "id": "400",
            "href": "/api/clusters_mgmt/v1/errors/400",
            "code": "CLUSTERS-MGMT-400",
            "reason": f"Machine pool '{body['id']}': 501 nodes exceed the maximum of 500 nodes per machine pool",
            "operation_id": "",
        }
    assert sorted(server.emulator.ocm_machine_pools[CLUSTER]) == ["worker"]
    assert session.post(url, json=GPU_SPOT).status_code == 201
    scaled = session.patch(f"{url}/ml-training", json={"autoscaling": {"min_replicas": 0, "max_replicas": 10**9}})
    assert scaled.status_code == 400 and "nodes per machine pool" in scaled.json()["reason"]
    assert session.get(f"{url}/ml-training").json()["autoscaling"] == GPU_SPOT["autoscaling"]


def test_the_machine_pools_of_a_cluster_together_are_capped(ocm):
    server, session, url = ocm
    server.call(lambda: setattr(server.emulator, "ocm_max_nodes_per_cluster", 10))
    assert (
        session.post(url, json={**GPU_SPOT, "autoscaling": {"min_replicas": 0, "max_replicas": 8}}).status_code == 201
    )
    grown = session.patch(f"{url}/worker", json={"replicas": 3})  # 2 + 8 nodes so far; 3 + 8 is one too many
    assert grown.status_code == 400, grown.text
    assert grown.json()["reason"] == (
        f"Cluster '{CLUSTER}': its machine pools would have up to 11 compute nodes; the maximum is 10"
    )
    assert session.get(f"{url}/worker").json()["replicas"] == 2
    assert session.patch(f"{url}/worker", json={"replicas": 1}).status_code == 200


ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"availability_zones": ZONES}, "a hosted control plane node pool lives in one availability zone"),
        ({"subnets": ["subnet-0a1b2c3d", "subnet-1a1b2c3d"]}, "attribute 'subnets' takes one AWS subnet id"),
        ({"aws": {"additional_security_group_ids": ["sg-nope"]}}, "takes at most 10 security group ids"),
        ({"aws": {"tags": {"aws:owner": "me"}}}, "invalid AWS tag key 'aws:owner'"),
        ({"aws": {"tags": {"team": ""}}}, "invalid AWS tag value '' for key 'team'"),
    ],
)
def test_ocm_refuses_bad_zones_subnets_security_groups_and_tags_and_stores_nothing(ocm, changes, reason):
    """Issue #33: what OCM and rosa refuse in a machine pool's placement, as a 400 in OCM's error shape."""
    server, session, url = ocm
    refused = session.post(url, json={**GPU_SPOT, **changes})
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "CLUSTERS-MGMT-400" and reason in refused.json()["reason"], refused.json()
    assert sorted(server.emulator.ocm_machine_pools[CLUSTER]) == ["worker"]


def test_a_classic_cluster_caps_at_249_and_its_multi_az_pools_count_in_threes(ocm):
    server, session, _ = ocm
    server.emulator.ocm_add_cluster("classic-1", token=TOKEN, topology="classic")
    url = f"{server.url}/api/clusters_mgmt/v1/clusters/classic-1/machine_pools"
    too_many = session.post(url, json={**GPU_SPOT, "autoscaling": {"min_replicas": 0, "max_replicas": 250}})
    assert too_many.status_code == 400
    assert too_many.json()["reason"] == (
        "Machine pool 'ml-training': 250 nodes exceed the maximum of 249 nodes per machine pool"
    )
    uneven = session.post(
        url, json={**GPU_SPOT, "availability_zones": ZONES, "autoscaling": {"min_replicas": 0, "max_replicas": 4}}
    )
    assert uneven.status_code == 400
    assert (
        uneven.json()["reason"]
        == "Multi AZ clusters require that the number of MachinePool replicas be a multiple of 3"
    )
    assert sorted(server.emulator.ocm_machine_pools["classic-1"]) == ["worker"]
    even = {**GPU_SPOT, "availability_zones": ZONES, "autoscaling": {"min_replicas": 3, "max_replicas": 6}}
    assert session.post(url, json=even).status_code == 201
    grown = session.patch(f"{url}/ml-training", json={"autoscaling": {"min_replicas": 3, "max_replicas": 7}})
    assert grown.status_code == 400 and "multiple of 3" in grown.json()["reason"]
    assert session.get(f"{url}/ml-training").json()["autoscaling"] == {"min_replicas": 3, "max_replicas": 6}
    full = session.patch(f"{url}/worker", json={"replicas": 244})  # 244 + 6 = 250 nodes in the cluster
    assert full.status_code == 400 and "the maximum is 249" in full.json()["reason"]
