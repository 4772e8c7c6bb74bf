"""Simulated fleet shapes and the simulated kubelet, through the official client."""

from __future__ import annotations

import collections
import json

import pytest
from kubernetes import client, watch

from kubesim import EmulatorServer
from kubesim.fleet import (
    ARCH_LABEL,
    BATCH_TAINT,
    CORDONED_NODE,
    GPU_COUNT_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_PRODUCTS,
    GPU_RESOURCE,
    GPU_TAINT,
    GPU_TOLERATION,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    MACHINE_POOL_LABEL,
    MACHINEPOOL_LABEL,
    SPOT_TAINT,
    UNSCHEDULABLE_TAINT,
    demo_fleet,
    load_fleet,
    node_manifest,
    synthetic_fleet,
)
from kubesim.kubelet import parse_quantity, pod_requests

from .conftest import kube_api_client, wait_until

EXPECTED = {
    "NVIDIA-H100-80GB-HBM3": 4,
    "NVIDIA-A100-SXM4-80GB": 3,
    "NVIDIA-GB200": 2,
    "NVIDIA-L40S": 4,
    "NVIDIA-L40": 3,
    "Tesla-T4": 5,
    "NVIDIA-Jetson-Thor": 2,
    None: 6,
}


# --------------------------------------------------------------------------- fleets
def test_demo_fleet_shape():
    nodes = demo_fleet()
    assert len(nodes) == 29
    per_product = collections.Counter(n["metadata"]["labels"].get(GPU_PRODUCT_LABEL) for n in nodes)
    assert per_product == EXPECTED
    assert set(GPU_PRODUCTS.values()) == {p for p in per_product if p}
    cordoned = [n["metadata"]["name"] for n in nodes if n["spec"].get("unschedulable")]
    assert cordoned == [CORDONED_NODE]
    for node in nodes:
        labels, spec, status = node["metadata"]["labels"], node["spec"], node["status"]
        taints = spec.get("taints", [])
        assert labels[HOSTNAME_LABEL] == node["metadata"]["name"]
        assert labels[MACHINE_POOL_LABEL] == labels[MACHINEPOOL_LABEL] and labels[INSTANCE_TYPE_LABEL]
        assert {"cpu", "memory", "ephemeral-storage", "pods"} <= set(status["allocatable"]) <= set(status["capacity"])
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in status["conditions"])
        assert (UNSCHEDULABLE_TAINT in taints) == (node["metadata"]["name"] == CORDONED_NODE)
        if GPU_PRODUCT_LABEL in labels:
            assert GPU_TAINT in taints
            assert status["allocatable"][GPU_RESOURCE] == labels[GPU_COUNT_LABEL] == status["capacity"][GPU_RESOURCE]
        else:
            assert GPU_TAINT not in taints and GPU_RESOURCE not in status["allocatable"]
        assert (SPOT_TAINT in taints) == (labels[MACHINE_POOL_LABEL] in ("t4-spot", "ml-training"))
        assert (BATCH_TAINT in taints) == (labels[MACHINE_POOL_LABEL] == "additional")
        arm = labels.get(GPU_PRODUCT_LABEL) in ("NVIDIA-GB200", "NVIDIA-Jetson-Thor")
        assert labels[ARCH_LABEL] == ("arm64" if arm else "amd64")


def test_demo_fleet_has_the_rosa_seed_machine_pools(kube_emulator, v1):
    """As the ROSA machine-pools seed: `additional` (2 x m5.xlarge, batch taint) and `ml-training`
    (2 x g4dn.xlarge, one T4 each, gpu + spot taints), selectable by node.kubernetes.io/machinepool."""
    load_fleet(kube_emulator, demo_fleet())
    additional = v1.list_node(label_selector=f"{MACHINEPOOL_LABEL}=additional").items
    training = v1.list_node(label_selector=f"{MACHINEPOOL_LABEL}=ml-training,node-type=gpu").items
    assert [n.metadata.name for n in additional] == ["additional-node-0", "additional-node-1"]
    assert [n.metadata.name for n in training] == ["ml-training-node-0", "ml-training-node-1"]
    for node in additional:
        assert node.metadata.labels[INSTANCE_TYPE_LABEL] == "m5.xlarge" and node.status.capacity["cpu"] == "4"
        assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("workload-type", "batch", "NoSchedule")]
    for node in training:
        assert node.metadata.labels[INSTANCE_TYPE_LABEL] == "g4dn.xlarge"
        assert node.metadata.labels[GPU_PRODUCT_LABEL] == "Tesla-T4" and node.status.allocatable[GPU_RESOURCE] == "1"
        assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
            ("nvidia.com/gpu", "true", "NoSchedule"),
            ("spot", "true", "PreferNoSchedule"),
        ]


def test_demo_fleet_served_and_selectable(kube_emulator, v1):
    load_fleet(kube_emulator, demo_fleet())
    for product, count in EXPECTED.items():
        selector = f"{GPU_PRODUCT_LABEL}={product}" if product else f"!{GPU_PRODUCT_LABEL}"
        assert len(v1.list_node(label_selector=selector).items) == count
    unschedulable = v1.list_node(field_selector="spec.unschedulable=true").items
    assert [n.metadata.name for n in unschedulable] == [CORDONED_NODE]
    spot = v1.list_node(label_selector=f"{MACHINE_POOL_LABEL}=t4-spot").items
    assert all(any(t.key == "spot" and t.effect == "PreferNoSchedule" for t in n.spec.taints) for n in spot)


def test_synthetic_fleet_is_deterministic_and_loads(kube_emulator, v1):
    # A tenth of the benchmark scale (5,000 nodes / 50,000 pods); bench/bench_kubesim.py times both steps.
    nodes, pods = synthetic_fleet(500, 5000, seed=7)
    assert synthetic_fleet(50, 500, seed=7) == synthetic_fleet(50, 500, seed=7) != synthetic_fleet(50, 500, seed=8)
    assert len(nodes) == 500 and len(pods) == 5000
    assert len({n["metadata"]["name"] for n in nodes}) == 500
    phases = collections.Counter(p["status"]["phase"] for p in pods)
    assert phases["Running"] > 1000 and phases["Succeeded"] > 100 and phases["Pending"] > 100
    # Running pods never overcommit a node's GPUs.
    gpus = {n["metadata"]["name"]: int(n["status"]["allocatable"].get(GPU_RESOURCE, 0)) for n in nodes}
    used = collections.Counter()
    for pod in pods:
        if pod["status"]["phase"] == "Running":
            used[pod["spec"]["nodeName"]] += int(
                pod["spec"]["containers"][0]["resources"]["requests"].get(GPU_RESOURCE, 0)
            )
    assert all(used[name] <= gpus[name] for name in used)

    load_fleet(kube_emulator, nodes, pods)
    seen, token = 0, None
    while True:
        page = json.loads(v1.list_pod_for_all_namespaces(limit=2000, _continue=token, _preload_content=False).data)
        seen += len(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            break
    assert seen == 5000
    assert len(v1.list_namespace().items) == 4 + 20


def test_quantities_and_requests():
    assert parse_quantity("500m") == 0.5 and parse_quantity("2Gi") == 2 * 2**30 and parse_quantity(3) == 3
    assert parse_quantity("1e3") == 1000 and parse_quantity("128974848") == 128974848
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1", GPU_RESOURCE: "2"}}},
            {"resources": {"requests": {"cpu": "750m", "memory": "1Gi"}}},
        ],
        "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
    }
    assert pod_requests(spec) == {"cpu": 2.0, GPU_RESOURCE: 2.0, "memory": 2**30}
    with pytest.raises(ValueError):
        parse_quantity("lots")


# --------------------------------------------------------------------------- kubelet
@pytest.fixture
def cluster():
    """Demo fleet + a fast kubelet (20 ms to start, 50 ms to run)."""
    with (
        EmulatorServer(fleet="demo", kubelet={"start_delay": 0.02, "run_seconds": 0.05}) as server,
        kube_api_client(server.url) as api,
    ):
        yield server, client.CoreV1Api(api)
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


def _gpu_pod(
    name: str,
    product: str = GPU_PRODUCTS["H100"],
    gpus: int = 1,
    tolerate: bool = True,
    annotations: dict | None = None,
) -> dict:
    spec = {
        "restartPolicy": "Never",
        "nodeSelector": {GPU_PRODUCT_LABEL: product},
        "containers": [
            {
                "name": "main",
                "image": "nvcr.io/nvidia/cuda:12.4.0-base",
                "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {GPU_RESOURCE: str(gpus)}},
            }
        ],
    }
    if tolerate:
        spec["tolerations"] = [GPU_TOLERATION]
    return {"metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def _phase(v1: client.CoreV1Api, name: str) -> str:
    return v1.read_namespaced_pod(name, "default").status.phase


def _condition(pod: client.V1Pod, ctype: str) -> client.V1PodCondition | None:
    return next((c for c in pod.status.conditions or () if c.type == ctype), None)


def test_kubelet_runs_a_pod_to_succeeded_with_watch_events(cluster):
    server, v1 = cluster
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_namespaced_pod("default", _gpu_pod("train"))
    phases = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5):
        phase = event["object"].status.phase
        if not phases or phases[-1] != phase:
            phases.append(phase)
        if phase in ("Succeeded", "Failed"):
            w.stop()
    assert phases == ["Pending", "Running", "Succeeded"]
    pod = v1.read_namespaced_pod("train", "default")
    assert pod.spec.node_name.startswith("h100-node-")
    assert _condition(pod, "PodScheduled").status == "True"
    assert pod.status.start_time is not None and pod.status.pod_ip
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 0 and terminated.reason == "Completed"


def test_kubelet_exit_code_annotation_fails_the_pod(cluster):
    _server, v1 = cluster
    v1.create_namespaced_pod("default", _gpu_pod("crash", annotations={"kubesim/exit-code": "3"}))
    wait_until(lambda: _phase(v1, "crash") == "Failed")
    state = v1.read_namespaced_pod("crash", "default").status.container_statuses[0].state
    assert state.terminated.exit_code == 3 and state.terminated.reason == "Error"


def test_kubelet_never_finish_and_run_seconds(cluster):
    server, v1 = cluster
    v1.create_namespaced_pod("default", _gpu_pod("serve", annotations={"kubesim/never-finish": "true"}))
    v1.create_namespaced_pod("default", _gpu_pod("quick", annotations={"kubesim/run-seconds": "0"}))
    wait_until(lambda: _phase(v1, "quick") == "Succeeded")
    wait_until(lambda: _phase(v1, "serve") == "Running")
    assert ("default", "serve") not in server.kubelet._timers  # nothing left that would end it


def test_unschedulable_pods_stay_pending_with_reason(cluster):
    _server, v1 = cluster
    v1.create_namespaced_pod("default", _gpu_pod("no-toleration", tolerate=False))
    v1.create_namespaced_pod("default", _gpu_pod("too-big", gpus=9))
    v1.create_namespaced_pod("default", _gpu_pod("no-such-gpu", product="NVIDIA-B300"))

    def scheduled_condition(name: str):
        cond = _condition(v1.read_namespaced_pod(name, "default"), "PodScheduled")
        return cond if cond is not None and cond.status == "False" else None

    taint = wait_until(lambda: scheduled_condition("no-toleration"))
    assert taint.reason == "Unschedulable"
    # Per node, the first failing filter in the default scheduler's order counts.
    assert taint.message == (
        "0/29 nodes are available: 4 node(s) didn't match Pod's node affinity/selector, "
        "22 node(s) had untolerated taint {nvidia.com/gpu: true}, "
        "2 node(s) had untolerated taint {workload-type: batch}, "
        "1 node(s) were unschedulable."
    )
    assert "Insufficient nvidia.com/gpu" in wait_until(lambda: scheduled_condition("too-big")).message
    assert "didn't match Pod's node affinity/selector" in wait_until(lambda: scheduled_condition("no-such-gpu")).message
    for name in ("no-toleration", "too-big", "no-such-gpu"):
        pod = v1.read_namespaced_pod(name, "default")
        assert pod.status.phase == "Pending" and pod.spec.node_name is None


def test_cordoned_node_is_skipped_and_resources_are_counted(cluster):
    _server, v1 = cluster
    pin = {
        "metadata": {"name": "pinned"},
        "spec": {
            "nodeSelector": {HOSTNAME_LABEL: CORDONED_NODE},
            "tolerations": [GPU_TOLERATION],
            "containers": [{"name": "main", "image": "x"}],
        },
    }
    v1.create_namespaced_pod("default", pin)
    cond = wait_until(lambda: _condition(v1.read_namespaced_pod("pinned", "default"), "PodScheduled"))
    assert cond.status == "False" and "1 node(s) were unschedulable" in cond.message

    # 2 A100 nodes are schedulable with 8 GPUs each: two 8-GPU pods fit, the third does not.
    for i in range(3):
        v1.create_namespaced_pod(
            "default",
            _gpu_pod(f"a100-{i}", product=GPU_PRODUCTS["A100"], gpus=8, annotations={"kubesim/never-finish": "true"}),
        )
    wait_until(lambda: [_phase(v1, f"a100-{i}") for i in range(3)].count("Running") == 2)
    nodes = {v1.read_namespaced_pod(f"a100-{i}", "default").spec.node_name for i in range(3)}
    assert CORDONED_NODE not in nodes and len(nodes - {None}) == 2
    pending = [f"a100-{i}" for i in range(3) if _phase(v1, f"a100-{i}") == "Pending"]
    assert len(pending) == 1
    # Freeing a node (delete a running pod) lets the pending one in.
    running = next(f"a100-{i}" for i in range(3) if f"a100-{i}" not in pending)
    v1.delete_namespaced_pod(running, "default")
    wait_until(lambda: _phase(v1, pending[0]) == "Running")


def test_pending_pod_is_scheduled_when_a_matching_node_appears(cluster):
    server, v1 = cluster
    pod = {
        "metadata": {"name": "waits"},
        "spec": {"nodeSelector": {MACHINE_POOL_LABEL: "new-pool"}, "containers": [{"name": "main", "image": "x"}]},
    }
    v1.create_namespaced_pod("default", pod)
    wait_until(lambda: _condition(v1.read_namespaced_pod("waits", "default"), "PodScheduled"))
    node = node_manifest("cpu", 3)
    node["metadata"]["name"] = "new-pool-node-0"
    node["metadata"]["labels"][MACHINE_POOL_LABEL] = "new-pool"
    v1.create_node(node)
    wait_until(lambda: _phase(v1, "waits") == "Succeeded")
    assert v1.read_namespaced_pod("waits", "default").spec.node_name == "new-pool-node-0"


def test_kubelet_can_be_enabled_on_a_running_server(kube_emulator, v1):
    v1.create_node(node_manifest("cpu", 3))
    v1.create_namespaced_pod(
        "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    )
    assert _phase(v1, "p") == "Pending"
    kube_emulator.enable_kubelet(start_delay=0, run_seconds=0)
    wait_until(lambda: _phase(v1, "p") == "Succeeded")


def test_kubelet_decides_every_pending_pod_while_the_api_answers():
    """3,000 pending pods: the kubelet schedules or refuses each while lists keep answering (how long a list
    takes meanwhile is measured by bench/bench_kubesim.py)."""
    nodes, pods = synthetic_fleet(300, 3000, seed=3)
    with (
        EmulatorServer(kubelet={"start_delay": 0.05, "run_seconds": 0.2}) as server,
        kube_api_client(server.url) as api,
    ):
        load_fleet(server, nodes, pods)
        v1 = client.CoreV1Api(api)

        def undecided() -> int:
            page = json.loads(
                v1.list_pod_for_all_namespaces(
                    field_selector="status.phase=Pending,spec.nodeName=", _preload_content=False
                ).data
            )
            return sum(
                1
                for p in page["items"]
                if not any(c["type"] == "PodScheduled" for c in p["status"].get("conditions", ()))
            )

        wait_until(lambda: undecided() == 0, timeout=30, interval=0.05)
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)
