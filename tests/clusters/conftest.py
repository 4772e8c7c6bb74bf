"""Fixtures for the cluster adapter, inventory, membership and capacity, against the kubesim emulator over HTTP.

Every test gets a fresh emulator with the demo fleet (kubesim.fleet: 29 nodes) and a backend `sim`
connected to it by API URL, exactly as a real cluster would be. The config below is small and explicit
so figures can be asserted exactly:

    pool train    (common: gpu-toleration)  platforms h100 [h100 selector], a100 [a100 selector]
    pool research (common: gpu-toleration)  platform  any-h100 [h100 selector]   -> h100 nodes are SHARED
    pool batch                               platform  cpu [machine-pool=cpu]
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clusters.models import Backend
from configs import store
from configs.revisions import Actor
from kubesim import EmulatorServer

CLI = Actor(name="tester", source="cli")
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
TEMPLATES = {
    "gpu-toleration": {"spec": {"tolerations": [GPU_TOLERATION]}},
    "h100": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}},
    "a100": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}},
    "cpu": {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}},
}
H100_NODES = [f"h100-node-{i}" for i in range(4)]
A100_MEMBERS = ["a100-node-0", "a100-node-1"]  # a100-node-2 is cordoned
CPU_NODES = [f"cpu-node-{i}" for i in range(4)]


@pytest.fixture
def kube_server() -> Iterator[EmulatorServer]:
    with EmulatorServer(host="127.0.0.1", port=0, fleet="demo") as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def backend(db, kube_server) -> Backend:
    store.apply("BACKEND", "sim", {"description": "simulated", "namespace": "default", "api_url": kube_server.url}, CLI)
    return Backend.objects.get(name="sim")


@pytest.fixture
def pools_config(backend) -> None:
    store.apply_many("POD_TEMPLATE", TEMPLATES, CLI)
    store.apply_many(
        "POOL",
        {
            "train": {
                "backend": "sim",
                "common_pod_template": ["gpu-toleration"],
                "platforms": {"h100": {"override_pod_template": ["h100"]}, "a100": {"override_pod_template": ["a100"]}},
            },
            "research": {
                "backend": "sim",
                "common_pod_template": ["gpu-toleration"],
                "platforms": {"any-h100": {"override_pod_template": ["h100"]}},
            },
            "batch": {"backend": "sim", "platforms": {"cpu": {"override_pod_template": ["cpu"]}}},
        },
        CLI,
    )


def running_pod(
    name: str,
    node: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    gpu: int = 0,
    workload: bool = False,
    phase: str = "Running",
    namespace: str = "team-a",
) -> dict:
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    labels = {"pool-portal/workflow": "wf-1"} if workload else {"app": "other"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x", "resources": {"requests": requests}}]},
        "status": {"phase": phase},
    }


from tests.clusters.machine_pools import machine_pools  # noqa: E402, F401 (a fixture: backend `sim` + machine pools)
from tests.integration.conftest import demo_pools, reference_config  # noqa: E402, F401  (shared demo data)
