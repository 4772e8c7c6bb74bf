"""clusters.machinepools.export, pure: the seed module's exact variable names for a spot and an on-demand pool,
one module block per pool, what the module cannot express said as comments, and rosa's flag spellings."""

from __future__ import annotations

import re
from decimal import Decimal

from clusters.machinepools import export
from clusters.machinepools.spec import MachinePoolSpec, Taint

# The variables of the seed's module (seed 004: "Input Variables" and "Usage Examples").
MODULE_VARIABLES = {
    "cluster_id", "create_additional_pool", "additional_pool_name", "additional_pool_instance_type",
    "additional_pool_min_replicas", "additional_pool_max_replicas", "additional_pool_labels",
    "additional_pool_taints", "create_gpu_spot_pool", "gpu_spot_pool_name", "gpu_spot_pool_instance_type",
    "gpu_spot_pool_min_replicas", "gpu_spot_pool_max_replicas", "gpu_spot_pool_disk_size", "gpu_spot_pool_labels",
    "gpu_spot_max_price",
}  # fmt: skip
GPU_TAINTS = export.MODULE_GPU_SPOT_TAINTS


def variables(text: str) -> set[str]:
    return set(re.findall(r"^  ([a-z_]+)\s+=", text, re.M)) - {"source"}


def test_a_spot_pool_maps_to_the_gpu_spot_variables():
    spec = MachinePoolSpec("ml-training", "p3.2xlarge", min_replicas=0, max_replicas=5,
                           labels={"ml-framework": "pytorch", "node-type": "gpu"}, taints=GPU_TAINTS, spot=True,
                           max_price=Decimal("0.9000"), disk_size_gib=500)  # fmt: skip
    result = export.terraform(spec, "abc123")
    assert variables(result.text) <= MODULE_VARIABLES
    assert variables(result.text) == {
        "cluster_id", "create_gpu_spot_pool", "gpu_spot_pool_name", "gpu_spot_pool_instance_type",
        "gpu_spot_pool_min_replicas", "gpu_spot_pool_max_replicas", "gpu_spot_pool_disk_size",
        "gpu_spot_max_price", "gpu_spot_pool_labels",
    }  # fmt: skip
    assert 'gpu_spot_max_price          = "0.9"' in result.text and "gpu_spot_pool_disk_size     = 500" in result.text
    assert result.notes == () and 'module "machine_pools_ml_training" {' in result.text


def test_an_on_demand_pool_maps_to_the_additional_pool_variables_and_says_what_is_lost():
    taint = Taint("workload-type", "batch", "NoSchedule")
    spec = MachinePoolSpec("batch-workers", "m5.2xlarge", min_replicas=2, max_replicas=10,
                           labels={"team": "data-engineering", "workload-type": "batch"}, taints=(taint,))  # fmt: skip
    result = export.terraform(spec)
    assert variables(result.text) <= MODULE_VARIABLES and "create_additional_pool        = true" in result.text
    assert "cluster_id = module.rosa_cluster.cluster_id" in result.text  # the seed's expression
    assert '      effect = "NoSchedule"' in result.text and result.notes == ()
    lost = export.terraform(MachinePoolSpec("gpu2", "g5.xlarge", max_replicas=2, spot=True, taints=(taint,)))
    assert lost.notes == (
        "taints: the module gives its GPU spot pool its own (nvidia.com/gpu=true:NoSchedule, "
        "spot=true:PreferNoSchedule), not this pool's (workload-type=batch:NoSchedule)",
        "labels: the module puts node-type=gpu on its GPU spot pool, which this pool has not",
    )
    assert lost.text.startswith("# machine pool gpu2, exported by the portal\n# not expressible: taints:")


def test_hcl_strings_are_escaped():
    spec = MachinePoolSpec("x", "m5.xlarge", max_replicas=1, labels={"a": "b"})
    assert '"${' not in export.terraform(spec, 'id"${x}').text
    assert 'cluster_id = "id\\"$${x}"' in export.terraform(spec, 'id"${x}').text


def test_rosa_command_line():
    spec = MachinePoolSpec("mp-1", "r5.2xlarge", autoscaling=False, replicas=2, labels={"foo": "bar", "bar": "baz"},
                           spot=True, max_price=Decimal("0.5"))  # fmt: skip
    text = export.rosa(spec, "my cluster").text
    assert text.split(" \\\n  ") == [
        "rosa create machinepool --cluster='my cluster'", "--name=mp-1", "--instance-type=r5.2xlarge",
        "--replicas=2", "--labels=foo=bar,bar=baz", "--use-spot-instances", "--spot-max-price=0.5",
        "--disk-size=300GiB\n",
    ]  # fmt: skip
