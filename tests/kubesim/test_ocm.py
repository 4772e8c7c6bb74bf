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
