"""A provider outage during reconcile loses nothing and converges when the provider returns (issue #14, "Proof"):
OCM answers 503 while the portal sends an edit (batch-workers' max 10 -> 12), a new pool (the seed's
ml-training) and a deletion (`retired`); the rows stay the truth, marked `retrying`; once OCM answers again,
the next pass leaves OCM holding exactly the desired pools (and ROSA's own `worker`, which the portal never touches)."""

from __future__ import annotations

import pytest

from clusters.models import MachinePool
from configs import store

from .conftest import CLI, MACHINEPOOL, OCM_CLUSTER, converge, pool_nodes
from .test_rosa_seed_examples import BATCH_WORKERS, ML_TRAINING

State = MachinePool.State


def held(cloud) -> dict[str, dict]:
    return cloud.call(lambda: {k: dict(v) for k, v in cloud.emulator.ocm_machine_pools[OCM_CLUSTER].items()})


def ocm_down(cloud) -> None:
    cloud.emulator.ocm_fail_next(503, times=None)  # until cleared


def ocm_writes_down(cloud) -> None:
    """OCM lists, but refuses every write: the outage begins in the middle of a pass."""
    for method in ("POST", "PATCH", "DELETE"):
        cloud.emulator.ocm_fail_next(503, times=None, method=method)


@pytest.mark.parametrize("outage", [ocm_down, ocm_writes_down], ids=["all-calls", "writes-only"])
def test_an_ocm_outage_during_reconcile_loses_nothing_and_converges(rosa, cloud, outage):
    store.apply("MACHINE_POOL", "batch-workers", {"backend": "rosa-sim", **BATCH_WORKERS}, CLI)
    store.apply("MACHINE_POOL", "retired", {"backend": "rosa-sim", **BATCH_WORKERS, "labels": {}, "taints": []}, CLI)
    assert sorted(converge(rosa).created) == ["batch-workers", "retired"]
    pool_nodes(rosa, MACHINEPOOL, "batch-workers", at_least=2)

    edited = {**BATCH_WORKERS, "autoscaling": {"min_replicas": 2, "max_replicas": 12}}
    store.apply("MACHINE_POOL", "batch-workers", {"backend": "rosa-sim", **edited}, CLI)
    store.apply("MACHINE_POOL", "ml-training", {"backend": "rosa-sim", **ML_TRAINING}, CLI)
    store.delete("MACHINE_POOL", "retired", CLI)
    outage(cloud)

    for attempt in (1, 2, 3):
        outcome = converge(rosa)
        assert outcome.retry and {"batch-workers", "ml-training"} <= set(outcome.retrying)
        rows = {row.name: row for row in MachinePool.objects.all()}
        assert {name: (row.state, row.attempts) for name, row in rows.items()} == {
            "batch-workers": (State.RETRYING, attempt),
            "ml-training": (State.RETRYING, attempt),
        }
        assert "503" in rows["ml-training"].last_answer
    # nothing lost: the definitions are as written, the provider still has what it had
    rows = {row.name: row for row in MachinePool.objects.all()}
    assert (rows["batch-workers"].max_replicas, rows["ml-training"].instance_type) == (12, "p3.2xlarge")
    assert store.show("MACHINE_POOL", "batch-workers")["autoscaling"]["max_replicas"] == 12
    assert sorted(held(cloud)) == ["batch-workers", "retired", "worker"]
    assert held(cloud)["batch-workers"]["autoscaling"]["max_replicas"] == 10
    assert len(pool_nodes(rosa, MACHINEPOOL, "batch-workers", at_least=2)) == 2  # the running nodes untouched

    cloud.emulator.ocm_clear_failures()
    outcome = converge(rosa)

    assert (outcome.updated, outcome.created, outcome.deleted) == (["batch-workers"], ["ml-training"], ["retired"])
    assert not outcome.retrying and not outcome.failed
    assert {row.name: (row.state, row.attempts) for row in MachinePool.objects.all()} == {
        "batch-workers": (State.READY, 0),
        "ml-training": (State.READY, 0),
    }
    now = held(cloud)
    assert sorted(now) == ["batch-workers", "ml-training", "worker"]
    assert now["batch-workers"]["autoscaling"] == {"min_replicas": 2, "max_replicas": 12}
    assert (now["ml-training"]["instance_type"], now["ml-training"]["autoscaling"]["max_replicas"]) == ("p3.2xlarge", 5)
    assert converge(rosa).in_step == ["batch-workers", "ml-training"]  # converged: the next pass changes nothing
