"""Machine pools reconciled to ROSA: the OpenShift Cluster Manager API served by kubesim, over HTTP."""

from __future__ import annotations

from cryptography.fernet import Fernet

from clusters.machinepools.reconcile import reconcile_backend
from clusters.models import MachinePool
from tests.clusters.providers.conftest import (
    GPU_TAINTS,
    OCM_CLUSTER,
    OCM_TOKEN,
    gpu_spot_pool,
    ocm_edit,
    ocm_pools,
)
from tests.factories import BackendFactory, NodeFactory, WorkerMachinePoolFactory

State = MachinePool.State


def test_pools_are_created_with_ocm_field_names(rosa, cloud):
    gpu_spot_pool(rosa)
    WorkerMachinePoolFactory(
        backend=rosa, name="extra-workers", autoscaling=False, replicas=2, labels={"tier": "batch"}
    )

    outcome = reconcile_backend(rosa.pk)

    assert outcome.created == ["extra-workers", "ml-training"] and not outcome.retry
    held = ocm_pools(cloud)
    assert sorted(held) == ["extra-workers", "ml-training", "worker"]
    gpu = held["ml-training"]
    assert gpu["instance_type"] == "g4dn.xlarge"
    assert gpu["autoscaling"] == {"min_replicas": 0, "max_replicas": 3} and "replicas" not in gpu
    assert gpu["labels"] == {
        "workload-type": "ml-training",
        "app.kubernetes.io/managed-by": "pool-portal",
        "pool-portal/node-pool": "rosa-prod-default",  # its nodes take the pods confined to the Default
    }
    assert gpu["taints"] == GPU_TAINTS
    assert gpu["aws"] == {"spot_market_options": {"max_price": 0.5}}
    assert gpu["root_volume"] == {"aws": {"size": 200}}
    assert held["extra-workers"]["replicas"] == 2 and "aws" not in held["extra-workers"]

    rows = {row.name: row for row in MachinePool.objects.all()}
    assert rows["ml-training"].state == State.READY  # scales from zero: no node yet is in step
    assert rows["extra-workers"].state == State.SCALING  # 2 asked, none yet
    assert rows["ml-training"].provider_id == "ml-training" and rows["ml-training"].last_answer == "created at rosa"
    assert rows["ml-training"].last_answer_at is not None and rows["ml-training"].attempts == 0


def test_an_edit_in_the_portal_updates_the_pool_and_a_deleted_row_deletes_it(rosa, cloud):
    pool = gpu_spot_pool(rosa)
    doomed = WorkerMachinePoolFactory(backend=rosa, name="old-pool")
    reconcile_backend(rosa.pk)

    pool.max_replicas, pool.labels = 5, {"workload-type": "training"}
    pool.save()
    doomed.delete()
    outcome = reconcile_backend(rosa.pk)

    assert outcome.updated == ["ml-training"] and outcome.deleted == ["old-pool"]
    held = ocm_pools(cloud)
    assert sorted(held) == ["ml-training", "worker"]  # ROSA's default pool is never the portal's to delete
    assert held["ml-training"]["autoscaling"]["max_replicas"] == 5
    pool.refresh_from_db()
    assert pool.last_answer == (
        "updated at rosa: max_replicas: provider 3, portal 5; "
        "labels: provider workload-type=ml-training, portal workload-type=training"
    )


def test_drift_at_the_provider_is_shown_then_corrected(rosa, cloud):
    pool = gpu_spot_pool(rosa)
    reconcile_backend(rosa.pk)
    ocm_edit(cloud, "ml-training", {"autoscaling": {"min_replicas": 0, "max_replicas": 10}})
    cloud.emulator.ocm_fail_next(503, times=1, method="PATCH")  # the first correction does not get through

    outcome = reconcile_backend(rosa.pk)

    pool.refresh_from_db()
    assert outcome.retrying == ["ml-training"] and pool.state == State.RETRYING and pool.attempts == 1
    assert pool.last_answer.startswith("drifted (max_replicas: provider 10, portal 3); correcting it failed: ")
    assert "HTTP 503" in pool.last_answer

    outcome = reconcile_backend(rosa.pk)

    pool.refresh_from_db()
    assert outcome.corrected == ["ml-training"]
    assert pool.state == State.READY and pool.attempts == 0
    assert pool.last_answer == "drift corrected at rosa: max_replicas: provider 10, portal 3"
    assert ocm_pools(cloud)["ml-training"]["autoscaling"]["max_replicas"] == 3


def test_an_outage_loses_nothing_and_converges_when_ocm_returns(rosa, cloud):
    kept = gpu_spot_pool(rosa)
    gone = WorkerMachinePoolFactory(backend=rosa, name="short-lived")
    reconcile_backend(rosa.pk)
    cloud.emulator.ocm_fail_next(503, times=None)  # OCM is down

    kept.max_replicas = 2
    kept.save()
    gone.delete()
    WorkerMachinePoolFactory(backend=rosa, name="new-pool", autoscaling=False, replicas=1)
    for attempt in (1, 2):
        outcome = reconcile_backend(rosa.pk)
        assert outcome.retry and sorted(outcome.retrying) == ["ml-training", "new-pool"]
        rows = MachinePool.objects.order_by("name")
        assert [(r.name, r.state, r.attempts) for r in rows] == [
            ("ml-training", State.RETRYING, attempt),
            ("new-pool", State.RETRYING, attempt),
        ]
        assert "HTTP 503: The service is temporarily unavailable (CLUSTERS-MGMT-503)" in rows[0].last_answer
    assert sorted(ocm_pools(cloud)) == ["ml-training", "short-lived", "worker"]  # nothing reached OCM

    cloud.emulator.ocm_clear_failures()
    outcome = reconcile_backend(rosa.pk)

    assert not outcome.retry
    assert (outcome.created, outcome.updated, outcome.deleted) == (["new-pool"], ["ml-training"], ["short-lived"])
    held = ocm_pools(cloud)
    assert sorted(held) == ["ml-training", "new-pool", "worker"]
    assert held["ml-training"]["autoscaling"]["max_replicas"] == 2 and held["new-pool"]["replicas"] == 1
    assert {(r.state, r.attempts) for r in MachinePool.objects.all()} == {(State.READY, 0), (State.SCALING, 0)}


def test_ocm_refuses_an_instance_type_change_and_the_pool_shows_it_until_changed_back(rosa, cloud):
    pool = gpu_spot_pool(rosa)
    reconcile_backend(rosa.pk)
    pool.instance_type = "g5.xlarge"
    pool.save()

    outcome = reconcile_backend(rosa.pk)

    pool.refresh_from_db()
    assert outcome.failed == ["ml-training"] and not outcome.retry
    assert pool.state == State.FAILED and pool.attempts == 1
    assert "HTTP 400: Machine pool 'ml-training': attribute 'instance_type' cannot be changed" in pool.last_answer
    assert "(CLUSTERS-MGMT-400)" in pool.last_answer
    assert ocm_pools(cloud)["ml-training"]["instance_type"] == "g4dn.xlarge"

    cloud.emulator.clear_request_log()
    reconcile_backend(rosa.pk)  # refused as it stands: not sent again
    assert [r.method.value for r in cloud.emulator] == ["GET"]
    pool.refresh_from_db()
    assert pool.state == State.FAILED and pool.attempts == 1

    pool.instance_type = "g4dn.xlarge"
    pool.save()
    reconcile_backend(rosa.pk)
    pool.refresh_from_db()
    assert pool.state == State.READY and pool.attempts == 0 and pool.last_answer == "in step with rosa"


def test_a_refused_token_fails_every_pool_with_ocms_words(rosa, cloud):
    gpu_spot_pool(rosa)
    rosa.ocm_token = "expired"
    rosa.save()

    outcome = reconcile_backend(rosa.pk)

    (pool,) = MachinePool.objects.all()
    assert outcome.failed == ["ml-training"] and pool.state == State.FAILED
    assert pool.last_answer.startswith(f"OCM cluster {rosa.ocm_cluster_id}: listing the machine pools: HTTP 401: ")
    assert "bearer token is invalid or expired (CLUSTERS-MGMT-401)" in pool.last_answer


def test_a_pool_the_portal_did_not_make_is_never_taken_over(rosa, cloud):
    WorkerMachinePoolFactory(backend=rosa, name="worker", instance_type="m5.2xlarge")

    outcome = reconcile_backend(rosa.pk)

    (pool,) = MachinePool.objects.all()
    assert outcome.failed == ["worker"] and pool.state == State.FAILED
    assert "rosa already has a machine pool named worker that the portal did not make" in pool.last_answer
    assert ocm_pools(cloud)["worker"]["instance_type"] == "m5.xlarge"

    pool.delete()
    assert reconcile_backend(rosa.pk).deleted == [] and "worker" in ocm_pools(cloud)


def test_missing_ocm_settings_and_no_provider_are_said_plainly(db, cloud):
    half = BackendFactory(name="half", machine_provider="rosa", ocm_url=cloud.url)
    plain = BackendFactory(name="plain")
    WorkerMachinePoolFactory(backend=half, name="a")
    WorkerMachinePoolFactory(backend=plain, name="b")

    reconcile_backend(half.pk)
    reconcile_backend(plain.pk)

    rows = {row.name: row for row in MachinePool.objects.all()}
    assert (rows["a"].state, rows["a"].last_answer) == (
        State.FAILED,
        "backend half: machine provider rosa needs ocm_cluster_id",
    )
    assert (rows["b"].state, rows["b"].last_answer) == (
        State.EXPORT_ONLY,
        "no machine provider on this backend: export only",
    )


def test_a_second_pass_finds_everything_in_step(rosa, cloud):
    gpu_spot_pool(rosa)
    gpu_spot_pool(rosa, name="capped-by-on-demand", max_price=None)
    WorkerMachinePoolFactory(backend=rosa, name="extra-workers", autoscaling=False, replicas=2, disk_size_gib=500)
    reconcile_backend(rosa.pk)

    outcome = reconcile_backend(rosa.pk)

    assert outcome.in_step == ["capped-by-on-demand", "extra-workers", "ml-training"]
    assert not (outcome.created or outcome.updated or outcome.corrected or outcome.deleted)
    assert ocm_pools(cloud)["capped-by-on-demand"]["aws"] == {"spot_market_options": {}}


def test_a_token_that_cannot_be_decrypted_is_named_not_sent(rosa, cloud, settings):
    gpu_spot_pool(rosa)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]  # not the key the token was written with

    reconcile_backend(rosa.pk)

    (pool,) = MachinePool.objects.all()
    assert pool.state == State.FAILED
    assert pool.last_answer.startswith("backend rosa-prod: the stored ocm_token cannot be decrypted")
    assert cloud.emulator.ocm_pool(OCM_CLUSTER, "ml-training") is None


def test_nodes_come_from_ocm_and_ready_ones_from_the_inventory(rosa, cloud):
    pool = WorkerMachinePoolFactory(backend=rosa, name="extra-workers", autoscaling=False, replicas=3)
    reconcile_backend(rosa.pk)
    cloud.call(
        lambda: cloud.emulator.ocm_machine_pools[OCM_CLUSTER]["extra-workers"]["status"].update(current_replicas=3)
    )
    label = {"node.kubernetes.io/machinepool": "extra-workers"}
    NodeFactory(backend=rosa, name="extra-workers-a1b2c", labels=label)
    NodeFactory(backend=rosa, name="extra-workers-d3e4f", labels=label, ready=False)  # still booting
    NodeFactory(backend=rosa, name="extra-workers-g5h6i", labels=label, unschedulable=True)  # cordoned
    NodeFactory(backend=rosa, name="other", labels={"node.kubernetes.io/machinepool": "else"})

    reconcile_backend(rosa.pk)

    pool.refresh_from_db()
    assert (pool.state, pool.nodes_now, pool.nodes_ready) == (State.READY, 3, 1)


def test_zones_security_groups_and_tags_reach_ocm_and_a_classic_cluster_s_cap_is_its_own(db, cloud):
    """Issue #33: the new fields go with OCM's names and come back in step; a row that skipped the doors (written
    directly) and asks a classic cluster for more than 249 nodes is refused by the simulated OCM, in its words."""
    cloud.emulator.ocm_add_cluster("classic-1", token=OCM_TOKEN, topology="classic")
    classic = BackendFactory(
        name="rosa-classic", machine_provider="rosa", ocm_url=cloud.url, ocm_cluster_id="classic-1",
        ocm_token=OCM_TOKEN, rosa_topology="classic",
    )  # fmt: skip
    zones = ["us-east-1a", "us-east-1b", "us-east-1c"]
    pool = gpu_spot_pool(
        classic, min_replicas=0, max_replicas=6, availability_zones=zones, security_groups=["sg-0123abcd"],
        aws_tags={"cost-center": "ml"},
    )  # fmt: skip
    assert reconcile_backend(classic.pk).created == ["ml-training"]
    held = cloud.call(lambda: dict(cloud.emulator.ocm_machine_pools["classic-1"]))
    assert held["ml-training"]["availability_zones"] == zones
    assert held["ml-training"]["aws"] == {
        "spot_market_options": {"max_price": 0.5},
        "additional_security_group_ids": ["sg-0123abcd"],
        "tags": {"cost-center": "ml"},
    }
    reconcile_backend(classic.pk)
    pool.refresh_from_db()
    assert pool.state == State.READY and pool.last_answer == "in step with rosa"

    big = gpu_spot_pool(classic, name="big", max_replicas=300)
    assert reconcile_backend(classic.pk).failed == ["big"]
    big.refresh_from_db()
    assert big.state == State.FAILED
    assert "HTTP 400: Machine pool 'big': 300 nodes exceed the maximum of 249 nodes per machine pool" in big.last_answer
    assert "big" not in cloud.call(lambda: dict(cloud.emulator.ocm_machine_pools["classic-1"]))
