"""The seed's ROSA machine-pools Terraform module (seed 004), described once (pure): its variables with their
defaults, and what it puts on its GPU spot pool by itself. The export (clusters.machinepools.export) writes
calls of it, the import (clusters.machinepools.terraform) reads them.

One call makes at most two pools: an additional worker pool (`additional_pool_*`, on-demand) and a GPU spot
pool (`gpu_spot_pool_*`, `gpu_spot_max_price`), each only when its `create_*` flag is true.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.machinepools.spec import Taint

SOURCE = "./modules/machine-pools"
# The seed's own expression for the cluster (its usage examples), written when a backend has no OCM id.
CLUSTER_EXPRESSION = "module.rosa_cluster.cluster_id"
# What the module gives its GPU spot pool itself (seed 004, "Default GPU Pool Taints"; its ML-training Job
# tolerates both and selects `node-type: gpu`). The module has no variable for other taints on that pool.
GPU_SPOT_TAINTS = (Taint("nvidia.com/gpu", "true", "NoSchedule"), Taint("spot", "true", "PreferNoSchedule"))
GPU_SPOT_LABELS = {"node-type": "gpu"}
ROSA_DEFAULT_DISK_GIB = 300  # what a pool gets when the module passes no disk size


@dataclass(frozen=True)
class Half:
    """One of the module's two pools: its variables' prefix, its `create_*` flag and the defaults of the
    seed's "Input Variables" table."""

    kind: str  # "additional" | "gpu_spot"
    prefix: str
    create: str
    spot: bool
    defaults: dict

    def variable(self, suffix: str) -> str:
        return f"{self.prefix}_{suffix}"


ADDITIONAL = Half(
    "additional",
    "additional_pool",
    "create_additional_pool",
    spot=False,
    defaults={
        "name": "additional",
        "instance_type": "m5.xlarge",
        "min_replicas": 1,
        "max_replicas": 5,
        "labels": {},
        "taints": [],
    },
)
# The table gives no default name or disk size for the GPU spot pool (its examples set both): the name is the
# portal's preset's (clusters.machinepools.presets), the disk ROSA's default.
GPU_SPOT = Half(
    "gpu_spot",
    "gpu_spot_pool",
    "create_gpu_spot_pool",
    spot=True,
    defaults={
        "name": "gpu-spot",
        "instance_type": "g4dn.xlarge",
        "min_replicas": 0,
        "max_replicas": 3,
        "disk_size": ROSA_DEFAULT_DISK_GIB,
        "labels": {},
    },
)
HALVES = (ADDITIONAL, GPU_SPOT)
# Where a default that is not the module's own comes from (said when it is applied).
DEFAULT_ORIGINS = {
    "gpu_spot_pool_name": "the portal's GPU spot preset's name; the module's table gives none",
    "gpu_spot_pool_disk_size": "GiB, ROSA's default root disk; the module's table gives none",
}
SPOT_MAX_PRICE = "gpu_spot_max_price"  # "" = capped at the on-demand price

# Every variable the module reads, and the module block's own arguments Terraform itself reads.
VARIABLES = frozenset(
    {"cluster_id", SPOT_MAX_PRICE}
    | {half.create for half in HALVES}
    | {half.variable(suffix) for half in HALVES for suffix in half.defaults}
)
META_ARGUMENTS = frozenset({"source", "version", "providers", "depends_on"})
