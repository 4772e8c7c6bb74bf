"""The seed's "Both Pools" example on ROSA the deployed way (issue #14, "Proof"): the machine pools reach OCM
through a real Celery worker on Redis (each save queues the reconcile task once it commits), pods are created
by that worker after the REST submission, and the workflows follow the cluster through their reconciler (what
the beat task runs). The compute pool keeps its one node; the GPU spot pool scales from zero."""

from __future__ import annotations

import pytest

from clusters import tasks
from clusters.machinepools.presets import GPU_SPOT_POOL
from clusters.models import MachinePool
from configs import store
from pools.services.machine_pool_platforms import make_platform
from tests.polling import wait_until
from workflows import reconcile
from workflows.models import Workflow, WorkflowStatus

from .conftest import CLI, MACHINEPOOL, OCM_CLUSTER, in_default, job, pod, pool_nodes, research_pool
from .test_karpenter_both_pools import COMPUTE

State = MachinePool.State


def completed(backend, workflow: Workflow) -> bool:
    reconcile.reconcile_backend(backend.pk)
    return Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.COMPLETED


@pytest.mark.django_db(transaction=True)
def test_both_pools_through_the_worker(redis_worker, rosa, cloud, submit):
    gpu_name = GPU_SPOT_POOL.name
    store.apply("MACHINE_POOL", "compute", {"backend": "rosa-sim", **COMPUTE}, CLI)
    store.apply("MACHINE_POOL", gpu_name, GPU_SPOT_POOL.document("rosa-sim"), CLI)

    def at_ocm() -> dict:
        return cloud.call(lambda: sorted(cloud.emulator.ocm_machine_pools[OCM_CLUSTER]))

    wait_until(lambda: at_ocm() == ["compute", gpu_name, "worker"], timeout=20, what="both pools created at OCM")
    (compute_node,) = pool_nodes(rosa, MACHINEPOOL, "compute")  # its minimum of one
    tasks.reconcile_all_machine_pools.delay()  # the periodic pass (beat), now that the node is there
    wait_until(
        lambda: (
            {r.name: (r.state, r.nodes_now) for r in MachinePool.objects.all()}
            == {"compute": (State.READY, 1), gpu_name: (State.READY, 0)}
        ),
        timeout=20,
        what="both pools ready at their minimum",
    )
    assert compute_node.labels["node.kubernetes.io/instance-type"] == "c5.2xlarge"

    research_pool(rosa)
    for name in ("compute", gpu_name):
        make_platform(name, CLI, pool="research")
    batch = submit(job("batch-job", "compute"))
    training = submit(job("ml-training", gpu_name, gpu=1))
    for workflow in (batch, training):
        wait_until(lambda w=workflow: completed(rosa, w), timeout=30, what=f"{workflow.workflow_id} completed")

    assert batch.tasks.get().node == compute_node.name  # the one node had room: no second one
    (gpu_node,) = pool_nodes(rosa, MACHINEPOOL, gpu_name)  # added for the task (scale from zero)
    task = training.tasks.get()
    assert task.node == gpu_node.name and task.retry_id == 0
    assert gpu_node.labels["node.kubernetes.io/capacity-type"] == "spot"
    assert pod(rosa, task.pod_name)["spec"]["nodeSelector"] == in_default(rosa, {MACHINEPOOL: gpu_name})
    assert len(pool_nodes(rosa, MACHINEPOOL, "compute")) == 1
