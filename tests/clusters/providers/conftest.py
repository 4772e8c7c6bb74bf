"""Fixtures: backends whose machine pools go to the simulated cloud: ROSA through kubesim's OCM API, Karpenter through
its NodePools, both over HTTP exactly as against the real services."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
import requests

from clusters.models import Backend
from kubesim import EmulatorServer
from tests.factories import BackendFactory, WorkerMachinePoolFactory
from tests.polling import PATIENCE

OCM_CLUSTER, OCM_TOKEN = "27f2ffad1fj2k3l4", "ocm-offline-token"
GPU_TAINTS = [
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
]


@pytest.fixture
def cloud() -> Iterator[EmulatorServer]:
    with EmulatorServer(host="127.0.0.1", port=0) as server:
        server.emulator.ocm_add_cluster(OCM_CLUSTER, token=OCM_TOKEN)
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def rosa(db, cloud) -> Backend:
    return BackendFactory(
        name="rosa-prod", machine_provider="rosa", ocm_url=cloud.url, ocm_cluster_id=OCM_CLUSTER, ocm_token=OCM_TOKEN
    )


@pytest.fixture
def karpenter(db, cloud) -> Backend:
    return BackendFactory(
        name="eks-prod", connection="url", api_url=cloud.url, machine_provider="karpenter", karpenter_node_class="gpu"
    )


def gpu_spot_pool(backend: Backend, name: str = "ml-training", **fields):
    """The seed's GPU spot pool: g4dn.xlarge, 0-3, GPU and spot taints."""
    values = {
        "instance_type": "g4dn.xlarge",
        "min_replicas": 0,
        "max_replicas": 3,
        "labels": {"workload-type": "ml-training"},
        "taints": GPU_TAINTS,
        "spot": True,
        "max_price": Decimal("0.5"),
        "disk_size_gib": 200,
        **fields,
    }
    return WorkerMachinePoolFactory(backend=backend, name=name, **values)


def ocm_pools(server: EmulatorServer) -> dict[str, dict]:
    return server.call(lambda: {k: dict(v) for k, v in server.emulator.ocm_machine_pools[OCM_CLUSTER].items()})


def ocm_edit(server: EmulatorServer, pool: str, body: dict) -> None:
    """Someone changes the pool at OCM behind the portal's back (the `rosa edit machinepool` way)."""
    answer = requests.patch(
        f"{server.url}/api/clusters_mgmt/v1/clusters/{OCM_CLUSTER}/machine_pools/{pool}",
        json=body,
        headers={"Authorization": f"Bearer {OCM_TOKEN}"},
        timeout=PATIENCE,
    )
    assert answer.status_code == 200, answer.text
