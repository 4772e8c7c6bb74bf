"""Machine pools reconciled to their provider (issue #14): 100 pools of one backend, against kubesim over HTTP.

* ROSA (the OCM machine-pools API): the first pass creates all 100 (100 POSTs), a pass over a provider in step
  (one list), and a pass that corrects 100 drifted pools (100 PATCHes);
* Karpenter (NodePools through the Kubernetes API): the first pass creates 100 NodePools, and a pass in step.

Each sample is one `reconcile_backend` pass, status writes included; the state a pass starts from is set up
outside the timing. The emulator runs in this process (its own thread), so request times include serving.
Target: ≤ 2 s per pass of 100 pools.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from bench.django_env import throwaway_database
from bench.harness import Row

POOLS, RUNS = 100, 7
CLUSTER, TOKEN = "bench-cluster", "bench-token"
TARGET = "≤ 2 s"


def run() -> list[Row]:
    from kubesim import EmulatorServer

    with EmulatorServer(port=0) as server, throwaway_database():
        server.emulator.ocm_add_cluster(CLUSTER, token=TOKEN)
        return _run(server)


def _run(server) -> list[Row]:
    from clusters.machinepools.reconcile import reconcile_backend
    from clusters.models import Backend, MachinePool

    rosa = Backend.objects.create(
        name="bench-rosa", machine_provider="rosa", ocm_url=server.url, ocm_cluster_id=CLUSTER, ocm_token=TOKEN
    )
    karpenter = Backend.objects.create(
        name="bench-karpenter", connection="url", api_url=server.url, machine_provider="karpenter"
    )
    for backend in (rosa, karpenter):
        MachinePool.objects.bulk_create(_pools(backend))
    emulator = server.emulator

    def forget_ocm() -> None:
        server.call(
            lambda: [emulator.ocm_machine_pools[CLUSTER].pop(f"bench-rosa-{i:03d}", None) for i in range(POOLS)]
        )

    def drift_ocm() -> None:
        def edit() -> None:
            for i in range(POOLS):
                emulator.ocm_machine_pools[CLUSTER][f"bench-rosa-{i:03d}"]["autoscaling"]["max_replicas"] = 9

        server.call(edit)

    def forget_nodepools() -> None:
        for item in emulator.list("karpenter.sh/nodepools"):
            emulator.delete("karpenter.sh/nodepools", item["metadata"]["name"])

    def check(backend, field: str) -> Callable[[object], None]:
        def verify(outcome) -> None:
            assert len(getattr(outcome, field)) == POOLS and not outcome.retry, outcome.as_dict()

        return verify

    def pass_over(backend) -> Callable[[], object]:
        return lambda: reconcile_backend(backend.pk)

    return [
        _sample("reconcile 100 machine pools: ROSA, all created", forget_ocm, pass_over(rosa), check(rosa, "created")),
        _sample("reconcile 100 machine pools: ROSA, in step", None, pass_over(rosa), check(rosa, "in_step")),
        _sample(
            "reconcile 100 machine pools: ROSA, drift corrected", drift_ocm, pass_over(rosa), check(rosa, "corrected")
        ),
        _sample(
            "reconcile 100 machine pools: Karpenter, all created",
            forget_nodepools,
            pass_over(karpenter),
            check(karpenter, "created"),
        ),
        _sample(
            "reconcile 100 machine pools: Karpenter, in step", None, pass_over(karpenter), check(karpenter, "in_step")
        ),
    ]


def _pools(backend) -> list:
    from clusters.models import MachinePool

    taints = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    return [
        MachinePool(
            backend=backend,
            name=f"{backend.name}-{i:03d}",
            instance_type="g4dn.xlarge" if i % 2 else "m5.xlarge",
            min_replicas=0,
            max_replicas=3,
            labels={"team": f"t{i % 10}"},
            taints=taints if i % 2 else [],
            spot=bool(i % 2),
        )
        for i in range(POOLS)
    ]


def _sample(name: str, reset, fn, verify) -> Row:
    samples = []
    for _ in range(RUNS):
        if reset is not None:
            reset()
        start = time.perf_counter()
        outcome = fn()
        samples.append(time.perf_counter() - start)
        verify(outcome)
    samples.sort()
    return Row(name, statistics.median(samples), samples[-1], RUNS, TARGET, "p99 column: slowest run")
