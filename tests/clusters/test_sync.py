"""Full inventory sync over HTTP with the official client: pagination, sums, idempotence, outages."""

from __future__ import annotations

import pytest

from clusters import inventory
from clusters.kube import node_pod_lists as kube_inventory
from clusters.kube.errors import KubeError
from clusters.models import Backend, Node
from tests.clusters.conftest import running_pod
from tests.queries import captured_queries


def test_full_sync_stores_every_node_with_its_fields(backend, kube_server):
    result = inventory.sync_backend(backend.pk)

    assert (result.nodes, result.created, result.updated, result.deleted) == (29, 29, 0, 0)
    assert Node.objects.filter(backend=backend).count() == 29
    h100 = Node.objects.get(backend=backend, name="h100-node-0")
    assert h100.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert h100.gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert h100.taints == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert h100.allocatable["nvidia.com/gpu"] == "8" and h100.capacity["cpu"] == "192"
    assert (h100.cpu_allocatable, h100.gpu_allocatable) == (191_500, 8)
    assert h100.memory_allocatable == 2046 * 2**30
    assert h100.ready and not h100.unschedulable
    assert {c["type"] for c in h100.conditions} == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert "lastHeartbeatTime" not in h100.conditions[0]  # heartbeats would make every node look changed
    cordoned = Node.objects.get(backend=backend, name="a100-node-2")
    assert cordoned.unschedulable
    backend.refresh_from_db()
    assert (backend.sync_status, backend.online, backend.last_error) == ("ok", True, "")
    assert backend.last_sync_at is not None


def test_lists_are_paginated_with_limit_and_continue(backend, kube_server, monkeypatch):
    monkeypatch.setattr(kube_inventory, "PAGE_SIZE", 10)
    kube_server.emulator.load("pods", [running_pod(f"p{i}", "cpu-node-0", cpu="100m") for i in range(25)])
    kube_server.emulator.clear_request_log()

    result = inventory.sync_backend(backend.pk)

    lists = [r for r in kube_server.emulator if r.params.get("limit")]
    assert {r.params["limit"] for r in lists} == {"10"}
    assert sum("continue" in r.params for r in lists) == 4  # 3 node pages + 3 pod pages = 2 firsts, 4 continues
    assert (result.nodes, result.pods, result.pages) == (29, 25, 6)
    assert Node.objects.get(backend=backend, name="cpu-node-0").cpu_used == 2_500


def test_pod_requests_are_summed_per_node_workloads_apart(backend, kube_server):
    kube_server.emulator.load(
        "pods",
        [
            running_pod("train-1", "h100-node-0", cpu="4", memory="16Gi", gpu=2, workload=True),
            running_pod("train-2", "h100-node-0", cpu="500m", memory="1Gi", gpu=1, workload=True, phase="Pending"),
            running_pod("daemon", "h100-node-0", cpu="250m", memory="512Mi"),
            running_pod("finished", "h100-node-0", cpu="8", gpu=4, workload=True, phase="Succeeded"),
            running_pod("failed", "h100-node-0", cpu="8", phase="Failed"),
            {**running_pod("unbound", "", cpu="8"), "status": {"phase": "Pending"}},
        ],
    )

    inventory.sync_backend(backend.pk)

    node = Node.objects.get(backend=backend, name="h100-node-0")
    assert node.requested_workload == {"cpu": 4_500, "memory": 17 * 2**30, "nvidia.com/gpu": 3}
    assert node.requested_other == {"cpu": 250, "memory": 512 * 2**20}
    assert (node.workload_pods, node.other_pods) == (2, 1)
    assert (node.cpu_used, node.gpu_used, node.memory_used) == (4_750, 3, 17 * 2**30 + 512 * 2**20)


def test_a_second_sync_of_an_unchanged_cluster_writes_nothing(backend, kube_server):
    inventory.sync_backend(backend.pk)
    with captured_queries() as queries:
        result = inventory.sync_backend(backend.pk)
    assert len(queries) <= 8, queries
    assert (result.created, result.updated, result.deleted) == (0, 0, 0)


def test_a_node_disappears_only_after_a_complete_list_lacks_it(backend, kube_server):
    inventory.sync_backend(backend.pk)
    kube_server.emulator.delete("nodes", "cpu-node-3")
    kube_server.emulator.fail_next("list", "pods", status=503)  # nodes listed fine, pods fail

    with pytest.raises(KubeError):
        inventory.sync_backend(backend.pk)
    assert Node.objects.filter(backend=backend, name="cpu-node-3").exists()

    result = inventory.sync_backend(backend.pk)
    assert result.deleted == 1
    assert not Node.objects.filter(backend=backend, name="cpu-node-3").exists()


def test_an_outage_leaves_the_inventory_intact_and_marks_the_backend(backend, kube_server):
    kube_server.emulator.load("pods", [running_pod("p", "cpu-node-0", cpu="2")])
    inventory.sync_backend(backend.pk)
    before = list(Node.objects.filter(backend=backend).order_by("name").values())
    kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"changed": "yes"}}})
    kube_server.emulator.fail_next("list", "nodes", status=503, times=None)

    with pytest.raises(KubeError) as caught:
        inventory.sync_backend(backend.pk)

    assert caught.value.transient and caught.value.k8s_status == 503
    assert "\n" not in str(caught.value) and "503" in str(caught.value)
    assert list(Node.objects.filter(backend=backend).order_by("name").values()) == before
    backend.refresh_from_db()
    assert backend.sync_status == Backend.SyncStatus.DEGRADED and not backend.online
    assert "listing nodes: HTTP 503" in backend.last_error and backend.last_error_at is not None

    kube_server.emulator.clear_failures()
    inventory.sync_backend(backend.pk)
    backend.refresh_from_db()
    assert backend.sync_status == "ok" and backend.online
    assert Node.objects.get(backend=backend, name="cpu-node-0").labels["changed"] == "yes"


def test_a_failure_midway_through_the_pages_writes_nothing(backend, kube_server, monkeypatch):
    monkeypatch.setattr(kube_inventory, "PAGE_SIZE", 10)
    calls = {"n": 0}
    original = kube_inventory.node_record

    def second_page_fails(raw):
        calls["n"] += 1
        if calls["n"] == 11:  # first item of page 2: make the next request fail instead
            kube_server.emulator.fail_next("list", "nodes", status=500, times=None)
        return original(raw)

    monkeypatch.setattr(kube_inventory, "node_record", second_page_fails)
    with pytest.raises(KubeError, match="HTTP 500"):
        inventory.sync_backend(backend.pk)
    assert not Node.objects.exists()


def test_an_unreachable_cluster_is_one_clean_error(backend):
    backend.api_url = "http://127.0.0.1:9"  # discard port: connection refused
    backend.save()
    with pytest.raises(KubeError) as caught:
        inventory.sync_backend(backend.pk)
    assert caught.value.transient
    assert str(caught.value) == "listing nodes: cannot connect to http://127.0.0.1:9: connection refused"
    backend.refresh_from_db()
    assert backend.sync_status == "degraded" and "connection refused" in backend.last_error


def test_a_forbidden_list_is_not_transient(backend, kube_server):
    kube_server.emulator.fail_next("list", "nodes", status=403, message='nodes is forbidden: User "x" cannot list')
    with pytest.raises(KubeError) as caught:
        inventory.sync_backend(backend.pk)
    assert not caught.value.transient
    assert str(caught.value) == 'listing nodes: HTTP 403 Forbidden: nodes is forbidden: User "x" cannot list'
