"""Machine pools reconciled to Karpenter: `karpenter.sh/v1` NodePools on the backend's cluster (kubesim)."""

from __future__ import annotations

from clusters.machinepools.reconcile import reconcile_backend
from clusters.models import MachinePool
from tests.clusters.providers.conftest import GPU_TAINTS, gpu_spot_pool
from tests.factories import WorkerMachinePoolFactory

State = MachinePool.State
NODEPOOLS = "karpenter.sh/nodepools"


def test_a_pool_becomes_a_nodepool_the_portal_manages(karpenter, cloud):
    gpu_spot_pool(karpenter)
    WorkerMachinePoolFactory(backend=karpenter, name="steady", autoscaling=False, replicas=2)

    outcome = reconcile_backend(karpenter.pk)

    assert outcome.created == ["ml-training", "steady"] and outcome.provider == "karpenter"
    nodepool = cloud.emulator.get(NODEPOOLS, "ml-training")
    assert nodepool["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "pool-portal"}
    spec = nodepool["spec"]
    assert spec["template"]["metadata"]["labels"] == {
        "node.kubernetes.io/machinepool": "ml-training",
        "workload-type": "ml-training",
        "pool-portal/node-pool": "eks-prod-default",  # its nodes take the pods confined to the Default
    }
    assert spec["template"]["spec"] == {
        "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        ],
        "taints": GPU_TAINTS,
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
    }
    # 3 nodes at most of g4dn.xlarge (4 vCPU, 16 GiB, 1 T4 each: the shipped catalog)
    assert spec["limits"] == {"nodes": "3", "cpu": "12", "memory": "49152Mi", "nvidia.com/gpu": "3"}
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    steady = cloud.emulator.get(NODEPOOLS, "steady")["spec"]
    assert steady["replicas"] == 2 and steady["limits"] == {"nodes": "2"}
    assert steady["template"]["spec"]["requirements"][1]["values"] == ["on-demand"]
    rows = {row.name: (row.state, row.provider_id) for row in MachinePool.objects.all()}
    assert rows == {"ml-training": (State.READY, "ml-training"), "steady": (State.SCALING, "steady")}


def test_nodepools_follow_edits_and_deletions_and_others_are_left_alone(karpenter, cloud):
    pool = gpu_spot_pool(karpenter)
    doomed = WorkerMachinePoolFactory(backend=karpenter, name="doomed")
    foreign = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}, "spec": {}}
    cloud.emulator.create(NODEPOOLS, foreign)
    reconcile_backend(karpenter.pk)

    pool.spot, pool.taints = False, GPU_TAINTS[:1]
    pool.save()
    doomed.delete()
    outcome = reconcile_backend(karpenter.pk)

    assert outcome.updated == ["ml-training"] and outcome.deleted == ["doomed"]
    names = sorted(p["metadata"]["name"] for p in cloud.emulator.list(NODEPOOLS))
    assert names == ["default", "ml-training"]  # the NodePool the portal did not make stays
    template = cloud.emulator.get(NODEPOOLS, "ml-training")["spec"]["template"]["spec"]
    assert template["taints"] == GPU_TAINTS[:1] and template["requirements"][1]["values"] == ["on-demand"]
    pool.refresh_from_db()
    assert pool.last_answer.startswith("updated at karpenter: taints: provider [nvidia.com/gpu=true:NoSchedule, ")
    assert pool.last_answer.endswith("spot: provider True, portal False")


def test_drift_is_corrected_and_the_node_count_is_karpenters(karpenter, cloud):
    pool = gpu_spot_pool(karpenter)
    reconcile_backend(karpenter.pk)
    cloud.emulator.patch(NODEPOOLS, "ml-training", {"spec": {"limits": {"nodes": "40"}}})
    cloud.emulator.set_status(NODEPOOLS, "ml-training", {"resources": {"nodes": "2", "cpu": "8"}})

    outcome = reconcile_backend(karpenter.pk)

    pool.refresh_from_db()
    assert outcome.corrected == ["ml-training"]
    assert pool.last_answer == "drift corrected at karpenter: max_replicas: provider 40, portal 3"
    assert cloud.emulator.get(NODEPOOLS, "ml-training")["spec"]["limits"]["nodes"] == "3"
    assert (pool.state, pool.nodes_now, pool.nodes_ready) == (State.READY, 2, 0)  # no node in the inventory yet


def test_a_cluster_outage_is_retried_and_converges(karpenter, cloud):
    gpu_spot_pool(karpenter)
    cloud.emulator.fail_next("*", "nodepools", status=503, times=None)

    outcome = reconcile_backend(karpenter.pk)

    (pool,) = MachinePool.objects.all()
    assert outcome.retrying == ["ml-training"] and (pool.state, pool.attempts) == (State.RETRYING, 1)
    assert "HTTP 503" in pool.last_answer
    cloud.emulator.clear_failures()
    assert reconcile_backend(karpenter.pk).created == ["ml-training"]
    pool.refresh_from_db()
    assert (pool.state, pool.attempts) == (State.READY, 0)


def test_karpenter_cannot_switch_between_static_and_autoscaling(karpenter, cloud):
    pool = WorkerMachinePoolFactory(backend=karpenter, name="steady", autoscaling=False, replicas=2)
    reconcile_backend(karpenter.pk)
    pool.autoscaling, pool.max_replicas = True, 4
    pool.save()

    outcome = reconcile_backend(karpenter.pk)

    pool.refresh_from_db()
    assert outcome.failed == ["steady"] and pool.state == State.FAILED
    assert "Karpenter cannot turn a static NodePool (fixed replicas) into a dynamic one" in pool.last_answer
    assert cloud.emulator.get(NODEPOOLS, "steady")["spec"]["replicas"] == 2


def test_a_second_pass_finds_everything_in_step(karpenter, cloud):
    gpu_spot_pool(karpenter)
    WorkerMachinePoolFactory(backend=karpenter, name="steady", autoscaling=False, replicas=2, labels={"tier": "batch"})
    reconcile_backend(karpenter.pk)

    outcome = reconcile_backend(karpenter.pk)

    assert outcome.in_step == ["ml-training", "steady"]
    assert not (outcome.created or outcome.updated or outcome.corrected or outcome.deleted)
