"""`python -m kubesim --fleet demo-clusters --machine-pools demo` (what `make dev` runs): one simulated cluster per
demo backend; the seed's two pools are machine pools of rosa-cluster-01's cloud; `ml-training` grows from zero for a
GPU pod, and a restart from the state files keeps the pools, their nodes and every cluster's own nodes."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from kubesim.fleet import DEMO_CLUSTERS, GPU_TOLERATION, SPOT_TOLERATION, demo_cluster_fleet
from tests.polling import PATIENCE

from .conftest import kube_api_client, wait_until

MACHINEPOOL = "node.kubernetes.io/machinepool"
POD = {
    "metadata": {"name": "train", "annotations": {"kubesim/never-finish": "true"}},
    "spec": {
        "containers": [{"name": "main", "image": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        "nodeSelector": {MACHINEPOOL: "ml-training"},
        "tolerations": [GPU_TOLERATION, SPOT_TOLERATION],
    },
}


def start(state: Path) -> tuple[subprocess.Popen, str]:
    argv = ["--fleet", "demo-clusters", "--kubelet", "--machine-pools", "demo", "--state", str(state)]
    argv += ["--boot-seconds", "0.2", "--scale-up-seconds", "0.1", "--start-delay", "0.05"]
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", "0", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, process.stdout.readline().strip()


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=PATIENCE)


def names(v1: client.CoreV1Api, pool: str) -> list[str]:
    return sorted(n.metadata.name for n in v1.list_node(label_selector=f"{MACHINEPOOL}={pool}").items)


def nodes_of_each_cluster(url: str) -> dict[str, list[str]]:
    nodes = {}
    for cluster in DEMO_CLUSTERS:
        with kube_api_client(f"{url}/clusters/{cluster}") as api:
            nodes[cluster] = sorted(n.metadata.name for n in client.CoreV1Api(api).list_node().items)
    return nodes


def test_demo_gpu_spot_pool_scales_from_zero_and_survives_a_restart(tmp_path):
    state = tmp_path / "kubesim"
    first, url = start(state)
    try:
        with kube_api_client(f"{url}/clusters/rosa-cluster-01") as api:
            v1 = client.CoreV1Api(api)
            wait_until(lambda: len(names(v1, "additional")) == 2, what="additional at its minimum")
            assert names(v1, "ml-training") == []
            assert len(v1.list_node().items) == 2  # the machine pools' nodes only
            static = nodes_of_each_cluster(url)
            for cluster in DEMO_CLUSTERS:
                if cluster != "rosa-cluster-01":
                    assert static[cluster] == sorted(n["metadata"]["name"] for n in demo_cluster_fleet(cluster))
            v1.create_namespaced_pod("default", POD)
            wait_until(lambda: v1.read_namespaced_pod("train", "default").status.phase == "Running", what="running")
            before = names(v1, "ml-training") + names(v1, "additional")
            assert len(before) == 3 and before[0].startswith("ml-training-")
    finally:
        stop(first)

    assert sorted(p.name for p in state.iterdir()) == sorted(f"{cluster}.json" for cluster in DEMO_CLUSTERS)
    second, url = start(state)
    try:
        with kube_api_client(f"{url}/clusters/rosa-cluster-01") as api:
            v1 = client.CoreV1Api(api)
            v1.create_namespaced_pod("default", {**POD, "metadata": {**POD["metadata"], "name": "train-2"}})
            wait_until(lambda: v1.read_namespaced_pod("train-2", "default").status.phase == "Running")
            after = names(v1, "ml-training") + names(v1, "additional")
            assert set(before) < set(after) and len(after) == 4  # the pools' nodes were adopted, not replaced
            assert v1.read_namespaced_pod("train", "default").status.phase == "Running"
        after_restart = nodes_of_each_cluster(url)
        del after_restart["rosa-cluster-01"], static["rosa-cluster-01"]
        assert after_restart == static
    finally:
        stop(second)
