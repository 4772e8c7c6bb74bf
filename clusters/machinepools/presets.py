"""The seed's two machine pools as MACHINE_POOL documents (pure), with the ROSA module's defaults
(seed 004, "Input Variables"): an additional worker pool (m5.xlarge, autoscaling 1–5) and a GPU spot pool
(g4dn.xlarge, 0–3, spot at the on-demand price cap, the module's two taints, and the `node-type: gpu` label
its ML-training Job selects on). The admin's "Add from preset" links prefill the add form with them;
docs/examples/machine_pool_*.json are the same documents for `config update MACHINE_POOL`."""

from __future__ import annotations

import copy
from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    slug: str
    title: str
    name: str  # the seed module's default pool name
    body: dict  # the MACHINE_POOL document, without its backend

    def document(self, backend: str) -> dict:
        return {"backend": backend, **copy.deepcopy(self.body)}


ADDITIONAL_WORKER_POOL = Preset(
    slug="additional-worker-pool",
    title="Additional worker pool (m5.xlarge, 1–5)",
    name="additional",
    body={
        "description": "General-purpose workers for workload isolation (seed 004: additional worker pool)",
        "instance_type": "m5.xlarge",
        "autoscaling": {"min_replicas": 1, "max_replicas": 5},
        "labels": {},
        "taints": [],
        "spot": False,
        "max_price": None,
        "disk_size": 300,
    },
)

GPU_SPOT_POOL = Preset(
    slug="gpu-spot-pool",
    title="GPU spot pool (g4dn.xlarge, 0–3, spot)",
    name="gpu-spot",
    body={
        "description": "GPU spot instances, scaled from zero (seed 004: GPU spot instance pool)",
        "instance_type": "g4dn.xlarge",
        "autoscaling": {"min_replicas": 0, "max_replicas": 3},
        "labels": {"node-type": "gpu"},
        "taints": [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
        ],
        "spot": True,
        "max_price": None,
        "disk_size": 300,
    },
)

PRESETS = {preset.slug: preset for preset in (ADDITIONAL_WORKER_POOL, GPU_SPOT_POOL)}
