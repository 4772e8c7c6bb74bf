"""Machine pools in the simulated cluster (kubesim.autoscaler): the OCM store and Karpenter NodePools become
nodes; the simulated autoscaler adds nodes for pending pods and removes idle ones; spot interruption.

Everything is read through the official client over HTTP; the OCM store is filled as the cloud's own state
(the dict kubesim.ocm serves), on the emulator's loop.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, watch

from clusters.machinepools.catalog import shipped
from clusters.machinepools.spec import MachinePoolSpec, Taint
from kubesim import EmulatorServer
from kubesim.machinepools import load_catalog, ocm_pools
from kubesim.spot import INTERRUPTION_AT_ANNOTATION, SPOT_INTERRUPTION_TAINT, TERMINATED_MESSAGE

from .conftest import kube_api_client, wait_until

CLUSTER = "2a3b4c5d6e7f"
MACHINEPOOL = "node.kubernetes.io/machinepool"
GPU_TAINTS = [
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
]
GPU_TOLERATIONS = [{**t, "operator": "Equal"} for t in GPU_TAINTS]
FAST = {
    "boot_seconds": 0.2,
    "scale_up_seconds": 0.1,
    "scale_down_seconds": 0.6,
    "sync_seconds": 0.05,
    "spot_notice_seconds": 0.5,
}


@pytest.fixture
def cloud() -> Iterator[EmulatorServer]:
    with EmulatorServer(kubelet={"start_delay": 0.01, "run_seconds": 0.3}, machine_pools=FAST) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def v1(cloud: EmulatorServer) -> Iterator[client.CoreV1Api]:
    with kube_api_client(cloud.url) as api:
        yield client.CoreV1Api(api)


def ocm_pool(pool_id: str, instance_type: str = "m5.xlarge", **fields) -> dict:
    return {
        "kind": "MachinePool",
        "id": pool_id,
        "href": f"/api/clusters_mgmt/v1/clusters/{CLUSTER}/machine_pools/{pool_id}",
        "instance_type": instance_type,
        "labels": {},
        "taints": [],
        **fields,
    }


def gpu_spot_pool(pool_id: str = "ml-training", low: int = 0, high: int = 3) -> dict:
    return ocm_pool(
        pool_id,
        "g4dn.xlarge",
        autoscaling={"min_replicas": low, "max_replicas": high},
        labels={"node-type": "gpu", "ml-framework": "pytorch"},
        taints=GPU_TAINTS,
        aws={"spot_market_options": {}},
    )


def put(server: EmulatorServer, pool: dict) -> None:
    server.call(lambda: server.emulator.ocm_machine_pools.setdefault(CLUSTER, {}).__setitem__(pool["id"], pool))


def remove(server: EmulatorServer, pool_id: str) -> None:
    server.call(lambda: server.emulator.ocm_machine_pools[CLUSTER].pop(pool_id))


def current_replicas(server: EmulatorServer, pool_id: str) -> int | None:
    return server.call(
        lambda: (server.emulator.ocm_machine_pools[CLUSTER][pool_id].get("status") or {}).get("current_replicas")
    )


def pool_nodes(v1: client.CoreV1Api, pool: str, label: str = MACHINEPOOL) -> list[client.V1Node]:
    return v1.list_node(label_selector=f"{label}={pool}").items


def ready(node: client.V1Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ())


def gpu_pod(
    v1: client.CoreV1Api,
    name: str,
    annotations: dict | None = None,
    pool: str = "ml-training",
    gpus: int = 1,
    by_affinity: bool = False,
) -> None:
    spec = {
        "containers": [{"name": "train", "image": "pytorch:2", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        "tolerations": GPU_TOLERATIONS,
    }
    if by_affinity:  # required node affinity instead of a nodeSelector
        term = {"matchExpressions": [{"key": MACHINEPOOL, "operator": "In", "values": [pool]}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    else:
        spec["nodeSelector"] = {MACHINEPOOL: pool}
    v1.create_namespaced_pod("default", {"metadata": {"name": name, "annotations": annotations or {}}, "spec": spec})


def phase(v1: client.CoreV1Api, name: str) -> str:
    return v1.read_namespaced_pod(name, "default").status.phase


# --------------------------------------------------------------------------------------------- nodes
def test_fixed_and_minimum_replicas_become_nodes_of_the_contracted_shape(cloud, v1):
    put(
        cloud,
        ocm_pool(
            "additional",
            replicas=2,
            labels={"workload-type": "batch"},
            taints=[{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}],
        ),
    )
    put(cloud, gpu_spot_pool("ml-training", low=1, high=3))

    nodes = wait_until(lambda: all(ready(n) for n in pool_nodes(v1, "additional")) and pool_nodes(v1, "additional"))
    node = nodes[0]
    name = node.metadata.name
    assert name.startswith("additional-") and len(name) == len("additional-") + 5
    assert name[-5:].isalnum() and name[-5:] == name[-5:].lower()
    assert node.metadata.labels == {
        MACHINEPOOL: "additional",
        "node.kubernetes.io/instance-type": "m5.xlarge",
        "node.kubernetes.io/capacity-type": "on-demand",
        "kubernetes.io/arch": "amd64",
        "workload-type": "batch",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/worker": "",
    }
    assert [t.to_dict() for t in node.spec.taints] == [
        {"key": "workload-type", "value": "batch", "effect": "NoSchedule", "time_added": None}
    ]
    assert node.status.capacity["cpu"] == "4" and node.status.capacity["memory"] == "16384Mi"
    assert node.status.allocatable == node.status.capacity

    gpu = wait_until(lambda: pool_nodes(v1, "ml-training"))
    assert len(gpu) == 1
    labels = gpu[0].metadata.labels
    assert labels["node.kubernetes.io/capacity-type"] == "spot"
    assert labels["nvidia.com/gpu.product"] == "Tesla-T4" and labels["node-type"] == "gpu"
    assert gpu[0].status.capacity["nvidia.com/gpu"] == "1"
    assert [(t.key, t.effect) for t in gpu[0].spec.taints] == [
        ("nvidia.com/gpu", "NoSchedule"),
        ("spot", "PreferNoSchedule"),
    ]
    wait_until(lambda: current_replicas(cloud, "additional") == 2 and current_replicas(cloud, "ml-training") == 1)


def test_node_labels_taints_and_capacity_are_what_the_portal_expects_of_the_pool(cloud, v1):
    """Contract 3, against the portal's own spec (clusters.machinepools): kubesim reads the catalog as a data file."""
    put(cloud, gpu_spot_pool(low=1, high=3))
    node = wait_until(lambda: pool_nodes(v1, "ml-training"))[0]
    spec = MachinePoolSpec(
        name="ml-training",
        instance_type="g4dn.xlarge",
        min_replicas=1,
        max_replicas=3,
        labels={"node-type": "gpu", "ml-framework": "pytorch"},
        taints=tuple(Taint(**t) for t in GPU_TAINTS),
        spot=True,
    )
    instance = shipped()["g4dn.xlarge"]
    name = node.metadata.name
    extra = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""}
    assert node.metadata.labels == {**spec.node_labels(instance), **extra}
    assert [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.spec.taints] == spec.node_taints()
    assert instance.capacity().items() <= node.status.capacity.items()
    assert node.status.allocatable == node.status.capacity


def test_a_new_node_registers_not_ready_and_turns_ready_after_the_boot_delay(cloud, v1):
    since = v1.list_node().metadata.resource_version
    put(cloud, ocm_pool("additional", replicas=1))
    seen = []
    for event in watch.Watch().stream(v1.list_node, resource_version=since, timeout_seconds=10):
        seen.append((event["type"], ready(event["object"])))
        if seen[-1][1]:
            break
    assert seen == [("ADDED", False), ("MODIFIED", True)]


def test_unknown_instance_type_makes_no_node_and_says_why(cloud, v1):
    put(cloud, ocm_pool("odd", "z9.huge", replicas=1))
    put(cloud, ocm_pool("fine", replicas=1))
    wait_until(lambda: pool_nodes(v1, "fine"))
    assert pool_nodes(v1, "odd") == []
    assert cloud.machine_pools.refused == {f"ocm/{CLUSTER}/odd": "unknown instance type 'z9.huge'"}


# --------------------------------------------------------------------------------------------- autoscaler
def test_pending_pod_scales_a_pool_up_from_zero_and_gets_bound(cloud, v1):
    put(cloud, gpu_spot_pool(low=0, high=3))
    v1.create_namespaced_pod(  # no toleration for the GPU taint: no machine pool can take it
        "default",
        {
            "metadata": {"name": "stray"},
            "spec": {"containers": [{"name": "c", "image": "x"}], "nodeSelector": {MACHINEPOOL: "ml-training"}},
        },
    )
    wait_until(lambda: v1.read_namespaced_pod("stray", "default").status.conditions, what="stray unschedulable")
    gpu_pod(v1, "too-big", gpus=2)  # a g4dn.xlarge has one T4
    wait_until(lambda: current_replicas(cloud, "ml-training") == 0, what="the pool at zero")
    gpu_pod(v1, "train", {"kubesim/never-finish": "true"}, by_affinity=True)

    wait_until(lambda: phase(v1, "train") == "Running", what="train running on a new node")
    nodes = pool_nodes(v1, "ml-training")
    assert [n.metadata.name for n in nodes] == [v1.read_namespaced_pod("train", "default").spec.node_name]
    assert phase(v1, "stray") == phase(v1, "too-big") == "Pending"
    wait_until(lambda: current_replicas(cloud, "ml-training") == 1)


def test_scale_up_stops_at_max(cloud, v1):
    put(cloud, gpu_spot_pool(low=0, high=2))
    for i in range(3):  # one T4 per g4dn.xlarge: three pods want three nodes
        gpu_pod(v1, f"train-{i}", {"kubesim/never-finish": "true"})

    wait_until(lambda: sum(phase(v1, f"train-{i}") == "Running" for i in range(3)) == 2)
    wait_until(lambda: current_replicas(cloud, "ml-training") == 2)
    assert len(pool_nodes(v1, "ml-training")) == 2
    assert [phase(v1, f"train-{i}") for i in range(3)].count("Pending") == 1


def test_idle_nodes_go_after_the_cool_down_down_to_min(cloud, v1):
    put(cloud, gpu_spot_pool(low=1, high=3))
    wait_until(lambda: len(pool_nodes(v1, "ml-training")) == 1)
    for i in range(3):
        gpu_pod(v1, f"train-{i}", {"kubesim/run-seconds": "0.5"})

    wait_until(lambda: len(pool_nodes(v1, "ml-training")) == 3, what="scaled up to 3")
    wait_until(lambda: all(phase(v1, f"train-{i}") == "Succeeded" for i in range(3)), what="pods done")
    wait_until(lambda: len(pool_nodes(v1, "ml-training")) == 1, what="back to min after the cool-down")
    wait_until(lambda: current_replicas(cloud, "ml-training") == 1)


def test_deleted_pool_drains_and_its_nodes_go(cloud, v1):
    put(cloud, ocm_pool("additional", replicas=2))
    v1.create_node({"metadata": {"name": "static-worker", "labels": {MACHINEPOOL: "additional"}}})
    wait_until(lambda: len(pool_nodes(v1, "additional")) == 3)
    remove(cloud, "additional")
    wait_until(lambda: [n.metadata.name for n in pool_nodes(v1, "additional")] == ["static-worker"])


def test_fewer_replicas_remove_nodes_idle_first(cloud, v1):
    put(cloud, ocm_pool("additional", replicas=3))
    wait_until(lambda: len(pool_nodes(v1, "additional")) == 3 and all(ready(n) for n in pool_nodes(v1, "additional")))
    v1.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "busy", "annotations": {"kubesim/never-finish": "true"}},
            "spec": {
                "containers": [{"name": "c", "image": "x"}],
                "nodeSelector": {MACHINEPOOL: "additional"},
                "tolerations": [{"operator": "Exists"}],
            },
        },
    )
    wait_until(lambda: phase(v1, "busy") == "Running")
    busy_node = v1.read_namespaced_pod("busy", "default").spec.node_name

    put(cloud, ocm_pool("additional", replicas=1))
    wait_until(lambda: [n.metadata.name for n in pool_nodes(v1, "additional")] == [busy_node])
    wait_until(lambda: current_replicas(cloud, "additional") == 1)
    assert phase(v1, "busy") == "Running"


def test_the_autoscaler_reads_its_pod_indexes_the_waiting_pods_and_each_nodes_running_ones(cloud, v1):
    """A pass looks at the Unschedulable pods and the nodes' running pods, indexed as pods change, not at every
    pod of the cluster."""
    put(cloud, ocm_pool("additional", replicas=1))
    put(cloud, gpu_spot_pool(low=0, high=0))  # nowhere to grow: its pod stays Unschedulable
    wait_until(lambda: [n for n in pool_nodes(v1, "additional") if ready(n)])
    node = pool_nodes(v1, "additional")[0].metadata.name
    v1.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "busy", "annotations": {"kubesim/never-finish": "true"}},
            "spec": {"containers": [{"name": "c", "image": "x"}], "nodeSelector": {MACHINEPOOL: "additional"}},
        },
    )
    gpu_pod(v1, "waiting")
    controller = cloud.machine_pools
    wait_until(lambda: phase(v1, "busy") == "Running" and cloud.call(lambda: list(controller._waiting)))
    assert cloud.call(lambda: (list(controller._waiting), dict(controller._pods_on))) == (
        [("default", "waiting")],
        {node: {("default", "busy")}},
    )
    v1.delete_namespaced_pod("waiting", "default")
    v1.delete_namespaced_pod("busy", "default")
    assert cloud.call(lambda: (controller._waiting, controller._pods_on, controller._node_of)) == ({}, {}, {})


def test_pods_there_before_the_autoscaler_started_keep_their_node(tmp_path):
    """Pods loaded before the machine pools start (a state file's) are indexed too: the node running one stays,
    the idle one goes."""
    server = EmulatorServer(kubelet={"start_delay": 0.01, "run_seconds": 3600}, machine_pools=FAST)
    pool = ocm_pool("additional", autoscaling={"min_replicas": 0, "max_replicas": 2})
    server.emulator.ocm_machine_pools = {CLUSTER: {"additional": pool}}
    shape = ocm_pools(server.emulator.ocm_machine_pools, load_catalog())[0][0]
    server.emulator.load("nodes", [shape.node(shape.instance_types[0], f"additional-{n}", True) for n in ("b", "i")])
    running = {
        "metadata": {"name": "busy", "namespace": "default", "annotations": {"kubesim/never-finish": "true"}},
        "spec": {"nodeName": "additional-b", "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
    }
    server.emulator.load("pods", [running])
    with server, kube_api_client(server.url) as api:
        v1 = client.CoreV1Api(api)
        wait_until(lambda: [n.metadata.name for n in pool_nodes(v1, "additional")] == ["additional-b"])
        assert phase(v1, "busy") == "Running"
        assert not server.emulator.internal_errors


# --------------------------------------------------------------------------------------------- spot
def test_random_spot_interruptions_when_asked_for():
    options = {**FAST, "spot_interruption_every": 0.2, "seed": 7}
    with EmulatorServer(kubelet=True, machine_pools=options) as server, kube_api_client(server.url) as api:
        v1 = client.CoreV1Api(api)
        put(server, gpu_spot_pool(low=1, high=1))
        first = wait_until(lambda: pool_nodes(v1, "ml-training"))[0].metadata.name
        wait_until(lambda: first not in [n.metadata.name for n in v1.list_node().items], what="interrupted, gone")
        assert not server.emulator.internal_errors


def test_spot_interruption_notice_drains_the_node_then_node_gone(cloud, v1):
    put(cloud, gpu_spot_pool(low=1, high=1))
    gpu_pod(v1, "train", {"kubesim/never-finish": "true"})
    wait_until(lambda: phase(v1, "train") == "Running")
    node = v1.read_namespaced_pod("train", "default").spec.node_name

    goes_at = cloud.interrupt_spot(node, notice_seconds=3600)  # the notice outlasts the test: only the drain

    noticed = v1.read_node(node)
    assert noticed.metadata.annotations[INTERRUPTION_AT_ANNOTATION] == goes_at
    assert goes_at.endswith("Z")
    assert SPOT_INTERRUPTION_TAINT in [
        {"key": t.key, "value": t.value, "effect": t.effect} for t in noticed.spec.taints
    ]
    # drained at the notice: evicted through the Eviction API (no budget protects it), while the node is still there
    wait_until(lambda: v1.list_namespaced_pod("default").items == [], what="the pod evicted")
    assert v1.read_node(node).metadata.name == node


def test_after_the_notice_a_pod_its_budget_kept_is_killed_and_the_node_goes(cloud, v1):
    put(cloud, gpu_spot_pool(low=1, high=1))
    gpu_pod(v1, "train", {"kubesim/never-finish": "true"})
    wait_until(lambda: phase(v1, "train") == "Running")
    v1.patch_namespaced_pod("train", "default", {"metadata": {"labels": {"app": "train"}}})
    with kube_api_client(cloud.url) as api:
        client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(
            "default",
            {"metadata": {"name": "train"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "train"}}}},
        )
    node = v1.read_namespaced_pod("train", "default").spec.node_name

    cloud.interrupt_spot(node)  # the drain is refused; the instance goes anyway when the notice is over

    pod = wait_until(
        lambda: (p := v1.read_namespaced_pod("train", "default")).status.phase == "Failed" and p, what="pod failed"
    )
    assert (pod.status.reason, pod.status.message) == ("Terminated", TERMINATED_MESSAGE)
    disruption = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (disruption.status, disruption.reason) == ("True", "TerminationByKubelet")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 143
    wait_until(lambda: node not in [n.metadata.name for n in v1.list_node().items], what="node deleted")
    replacement = wait_until(lambda: pool_nodes(v1, "ml-training"), what="the pool keeps its one node")
    assert replacement[0].metadata.name != node


def test_spot_interruption_asked_through_the_api_and_refused_on_demand(cloud, v1):
    put(cloud, gpu_spot_pool(low=1, high=1))
    put(cloud, ocm_pool("additional", replicas=1))
    spot = wait_until(lambda: pool_nodes(v1, "ml-training"))[0].metadata.name
    on_demand = wait_until(lambda: pool_nodes(v1, "additional"))[0].metadata.name

    with pytest.raises(ValueError, match="is not a spot node"):
        cloud.interrupt_spot(on_demand)
    v1.patch_node(spot, {"metadata": {"annotations": {"kubesim/interrupt-spot": "now"}}})

    wait_until(lambda: INTERRUPTION_AT_ANNOTATION in (v1.read_node(spot).metadata.annotations or {}))
    wait_until(lambda: spot not in [n.metadata.name for n in v1.list_node().items], what="node deleted")


# --------------------------------------------------------------------------------------------- Karpenter
def test_karpenter_nodepool_scales_within_its_limits_and_goes_with_it(cloud, v1):
    with kube_api_client(cloud.url) as api:
        custom = client.CustomObjectsApi(api)
        custom.create_cluster_custom_object(
            "karpenter.sh",
            "v1",
            "nodepools",
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": "gpu", "labels": {"app.kubernetes.io/managed-by": "pool-portal"}},
                "spec": {
                    "template": {
                        "metadata": {"labels": {MACHINEPOOL: "gpu"}},
                        "spec": {
                            "requirements": [
                                {
                                    "key": "node.kubernetes.io/instance-type",
                                    "operator": "In",
                                    "values": ["g5.xlarge", "g4dn.xlarge"],
                                },
                                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                            ],
                            "taints": GPU_TAINTS,
                        },
                    },
                    "limits": {"nvidia.com/gpu": "2"},
                    "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
                },
            },
        )
        for i in range(3):
            gpu_pod(v1, f"train-{i}", {"kubesim/never-finish": "true"}, pool="gpu")

        wait_until(lambda: sum(phase(v1, f"train-{i}") == "Running" for i in range(3)) == 2, what="2 running")
        nodes = pool_nodes(v1, "gpu", "karpenter.sh/nodepool")
        pending = next(f"train-{i}" for i in range(3) if phase(v1, f"train-{i}") == "Pending")
        assert len(nodes) == 2  # the third pod would pass the NodePool's GPU limit
        labels = nodes[0].metadata.labels
        assert labels["node.kubernetes.io/instance-type"] == "g4dn.xlarge"  # the cheapest allowed type that fits
        assert labels["karpenter.sh/capacity-type"] == "spot" and labels[MACHINEPOOL] == "gpu"
        status = wait_until(
            lambda: custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu").get("status")
        )
        assert status["resources"]["nodes"] == "2" and status["resources"]["nvidia.com/gpu"] == "2"

        custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu")
        wait_until(lambda: pool_nodes(v1, "gpu", "karpenter.sh/nodepool") == [], what="NodePool's nodes gone")
        left = v1.list_namespaced_pod("default").items  # the two bound pods were evicted with their nodes
        assert [(p.metadata.name, p.status.phase) for p in left] == [(pending, "Pending")]


def test_machine_pools_are_off_unless_enabled():
    with EmulatorServer() as server:
        assert server.machine_pools is None


def test_the_documented_example_runs_as_written():
    page = (Path(__file__).resolve().parents[2] / "docs" / "simulated-cluster.md").read_text()
    section = page.split("## Machine pools, the autoscaler and spot interruptions")[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/simulated-cluster.md", "exec"), {})
    printed = out.getvalue().splitlines()
    assert re.fullmatch(r"ml-training-[a-z0-9]{5} \{'current_replicas': 1\}", printed[0])
    assert printed[1].startswith("goes at ") and printed[1].endswith("Z")
    assert printed[2] == "evicted: []"
