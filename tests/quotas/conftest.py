"""Fixtures for node pools and quotas: the clusters suite's simulated cluster (kubesim, demo fleet: 29 nodes)
behind backend `sim`, its pools (train: h100 + a100 platforms; research: any-h100; batch: cpu), and teams.

    department research: projects vision, speech        department ops: project infer
    node pool h100     label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3   (h100-node-0..3)
    node pool a100     platform train/a100                                  (a100-node-0, a100-node-1)
    sim-default        every other node (23, a100-node-2 cordoned among them)
"""

from __future__ import annotations

import pytest

from clusters import inventory
from configs import store
from tests.clusters.conftest import (  # noqa: F401  (fixtures shared with the clusters tests)
    A100_MEMBERS,
    CLI,
    H100_NODES,
    backend,
    kube_server,
    pools_config,
)
from tests.factories import DepartmentFactory, ProjectFactory

H100_PRODUCT = "NVIDIA-H100-80GB-HBM3"
H100_LABEL = {"label": {"key": "nvidia.com/gpu.product", "value": H100_PRODUCT}}
A100_PLATFORM = {"platform": {"pool": "train", "platform": "a100"}}
FLEET_SIZE = 29


@pytest.fixture
def synced(pools_config, backend):  # noqa: F811  (the imported fixtures)
    inventory.sync_backend(backend.pk)
    return backend


@pytest.fixture
def teams(db):
    research, ops = DepartmentFactory(name="research"), DepartmentFactory(name="ops")
    return {
        "research": research,
        "ops": ops,
        "vision": ProjectFactory(name="vision", department=research),
        "speech": ProjectFactory(name="speech", department=research),
        "infer": ProjectFactory(name="infer", department=ops),
    }


@pytest.fixture
def carved(synced, teams):
    store.apply("NODE_POOL", "h100", {"backend": "sim", "selector": H100_LABEL}, CLI)
    store.apply("NODE_POOL", "a100", {"backend": "sim", "selector": A100_PLATFORM}, CLI)
    return synced
