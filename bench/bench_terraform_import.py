"""`machinepool import --terraform` (issue #33): a file of 50 calls of the seed's module, each the "Both Pools"
example with its own names, so 100 machine pools.

* parse: the file read into MACHINE_POOL documents (clusters.machinepools.terraform; python-hcl2's grammar is
  compiled once per process, before the samples, as `make install` caches it);
* import: the whole import (parse, the config store's checks and writes, revisions) in one transaction rolled
  back after each sample, i.e. a dry run, which does every write an import does.

Target: ≤ 2 s for the 50-module file.
"""

from __future__ import annotations

from bench.django_env import throwaway_database
from bench.harness import Row, measure

CALLS, RUNS = 50, 7
TARGET = "≤ 2 s"


def terraform_file(calls: int = CALLS) -> str:
    blocks = []
    for index in range(calls):
        blocks.append(f"""module "machine_pools_{index}" {{
  source = "./modules/machine-pools"

  cluster_id = module.rosa_cluster.cluster_id

  create_additional_pool        = true
  additional_pool_name          = "compute-{index}"
  additional_pool_instance_type = "c5.2xlarge"
  additional_pool_min_replicas  = 1
  additional_pool_max_replicas  = 20
  additional_pool_labels = {{
    "workload-type" = "batch"
  }}
  additional_pool_taints = [
    {{ key = "workload-type", value = "batch", schedule_type = "NoSchedule" }}
  ]

  create_gpu_spot_pool        = true
  gpu_spot_pool_name          = "gpu-{index}"
  gpu_spot_pool_instance_type = "g4dn.xlarge"
  gpu_spot_pool_max_replicas  = 3
}}
""")
    return "\n".join(blocks)


def run() -> list[Row]:
    with throwaway_database():
        return _run()


def _run() -> list[Row]:
    from clusters.machinepools.importing import import_terraform
    from clusters.machinepools.terraform import read
    from configs import store
    from configs.revisions import Actor

    actor = Actor(name="bench", source="cli")
    store.apply("BACKEND", "bench-rosa", {"description": "export only"}, actor)
    text = terraform_file()

    def parse() -> None:
        assert len(read(text).pools) == 2 * CALLS

    def dry_run() -> None:
        result = import_terraform(text, "bench.tf", actor, backend="bench-rosa", dry_run=True)
        assert len(result.pools) == 2 * CALLS

    name = f"terraform import: {CALLS} module calls ({2 * CALLS} machine pools)"
    return [
        measure(f"{name}, parse", parse, runs=RUNS, warmup=1, target=TARGET),
        measure(f"{name}, import (all writes, rolled back)", dry_run, runs=RUNS, warmup=1, target=TARGET),
    ]
