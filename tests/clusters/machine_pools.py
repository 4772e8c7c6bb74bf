"""The machine pools the machine-pool platform and capacity tests share: the ROSA seed's two pools (the
demo fleet has their nodes) and a GPU spot pool with no node yet, on backend `sim` with a pool `rosa`
that has OSMO's default templates, variables and K8_* validations."""

from __future__ import annotations

import pytest

from clusters import inventory
from configs import store
from pools.engine import default_templates, default_validations
from pools.engine.defaults import OSMO_DEFAULT_POOL, OSMO_DEFAULT_VARIABLES
from tests.clusters.conftest import CLI
from tests.factories import MachinePoolFactory

BATCH_TAINT = {"key": "workload-type", "value": "batch", "effect": "NoSchedule"}
GPU_TAINTS = [
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
]


@pytest.fixture
def machine_pools(backend, kube_server):
    """The seed's two pools (the demo fleet has their nodes) and a GPU spot pool that has none yet."""
    store.apply_many("RESOURCE_VALIDATION", default_validations(), CLI)
    store.apply_many("POD_TEMPLATE", default_templates(), CLI)
    store.apply(
        "POOL",
        "rosa",
        {
            "backend": "sim",
            "common_pod_template": list(OSMO_DEFAULT_POOL["common_pod_template"]),
            "common_resource_validations": list(OSMO_DEFAULT_POOL["common_resource_validations"]),
            "common_default_variables": dict(OSMO_DEFAULT_VARIABLES),
        },
        CLI,
    )
    inventory.sync_backend(backend.pk)
    MachinePoolFactory(
        backend=backend,
        name="additional",
        instance_type="m5.xlarge",
        min_replicas=1,
        max_replicas=5,
        spot=False,
        labels={"workload-type": "batch", "team": "data-engineering"},
        taints=[BATCH_TAINT],
    )
    MachinePoolFactory(backend=backend, name="ml-training", labels={"node-type": "gpu", "ml-framework": "pytorch"})
    MachinePoolFactory(backend=backend, name="gpu-zero", taints=GPU_TAINTS)
    return backend
