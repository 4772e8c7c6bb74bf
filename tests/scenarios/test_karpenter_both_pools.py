"""The seed's third usage example, "Both Pools", on a Karpenter backend (issue #14, "Proof"): the compute pool
(c5.2xlarge, 1–20) and the GPU spot pool (g4dn.xlarge, up to 3) defined by `config update MACHINE_POOL`,
reconciled into NodePools, made platforms; a batch task and a one-GPU training task submitted by the REST API
each make Karpenter launch a node of their own pool (Karpenter has no minimum: both scale from zero) and
complete there; and a spot interruption of the GPU node, asked through the Kubernetes API, rescheduled."""

from __future__ import annotations

import json

import pytest
from django.core.management import base

from clusters.kube.connection import connect
from clusters.machinepools.presets import GPU_SPOT_POOL
from pools.services.machine_pool_platforms import make_platform
from pools.services.preview import PreviewRequest, preview
from tests.clirun import run_as_cli
from workflows.models import WorkflowStatus

from .conftest import CLI, MACHINEPOOL, converge, in_default, job, pod, pool_nodes, research_pool

COMPUTE = {  # seed 004, "Both Pools": the additional pool
    "instance_type": "c5.2xlarge",
    "autoscaling": {"min_replicas": 1, "max_replicas": 20},
    "labels": {},
    "taints": [],
    "spot": False,
}
NODEPOOL = "karpenter.sh/nodepool"
REQUEST = "kubesim/interrupt-spot"  # the emulator's API for a spot interruption (kubesim.spot)


@pytest.fixture
def config_update(capsys, monkeypatch, tmp_path):
    """`python manage.py config update MACHINE_POOL NAME --file FILE`, as a shell runs it."""
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction

    def run(name: str, body: dict) -> str:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body))
        code, out, err = run_as_cli(capsys, "pools", "config", "update", "MACHINE_POOL", name, "--file", str(path))
        assert code == 0, err
        return out

    return run


def nodepools(backend) -> dict[str, dict]:
    kube = connect(backend)
    listed = kube.json("listing", kube.custom.list_cluster_custom_object, "karpenter.sh", "v1", "nodepools")
    return {item["metadata"]["name"]: item for item in listed["items"]}


def test_both_pools_on_karpenter_scale_from_zero_and_run_their_tasks(karpenter, cloud, config_update, submit, settle):
    gpu_name = GPU_SPOT_POOL.name  # the module's default name: the seed's example does not set one
    config_update("compute", {"backend": "eks-sim", **COMPUTE})
    gpu = GPU_SPOT_POOL.document("eks-sim")
    assert (gpu["instance_type"], gpu["autoscaling"]["max_replicas"], gpu["spot"]) == ("g4dn.xlarge", 3, True)
    config_update(gpu_name, gpu)

    outcome = converge(karpenter)

    assert sorted(outcome.created) == ["compute", gpu_name] and not outcome.retrying and not outcome.failed
    held = nodepools(karpenter)
    assert sorted(held) == ["compute", gpu_name]
    for name in held:
        assert held[name]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pool-portal"
    assert held["compute"]["spec"]["limits"]["nodes"] == "20"
    requirements = {r["key"]: r["values"] for r in held[gpu_name]["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["spot"]
    assert requirements["node.kubernetes.io/instance-type"] == ["g4dn.xlarge"]

    research_pool(karpenter)
    for name in ("compute", gpu_name):
        assert make_platform(name, CLI, pool="research").created
    pool_nodes(karpenter, "kubernetes.io/os", "linux")  # the inventory synced: no node of either pool yet
    for platform, resources in (("compute", {"cpu": 4}), (gpu_name, {"gpu": 1})):
        warnings = preview(PreviewRequest(pool="research", platform=platform, resources=resources))["warnings"]
        assert any(w.startswith(f"no node now; machine pool {platform} can add a ") for w in warnings), warnings

    batch = submit(job("batch-job", "compute"))
    training = submit(job("ml-training", gpu_name, gpu=1))
    for workflow in (batch, training):
        settle(karpenter, workflow, lambda w: w.status == WorkflowStatus.COMPLETED, what=workflow.workflow_id)

    for workflow, machine_pool, instance in ((batch, "compute", "c5.2xlarge"), (training, gpu_name, "g4dn.xlarge")):
        task = workflow.tasks.get()
        (node,) = pool_nodes(karpenter, NODEPOOL, machine_pool)  # one node launched for the one task
        assert task.node == node.name and task.retry_id == 0
        assert node.labels[MACHINEPOOL] == machine_pool
        assert node.labels["node.kubernetes.io/instance-type"] == instance
        assert pod(karpenter, task.pod_name)["spec"]["nodeSelector"] == in_default(
            karpenter, {MACHINEPOOL: machine_pool}
        )
    (gpu_node,) = pool_nodes(karpenter, NODEPOOL, gpu_name)
    assert gpu_node.labels["karpenter.sh/capacity-type"] == "spot" and gpu_node.labels["node-type"] == "gpu"
    assert {t["key"] for t in gpu_node.taints} == {"nvidia.com/gpu", "spot"}
    tolerations = pod(karpenter, training.tasks.get().pod_name)["spec"]["tolerations"]
    assert {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"} in tolerations


def test_a_karpenter_spot_node_interrupted_through_the_api_reschedules_the_training(
    karpenter, cloud, config_update, submit, settle, researcher
):
    """The GPU spot NodePool on Karpenter: the spot node is interrupted the way a person asks kubesim to
    (`kubectl annotate node NAME kubesim/interrupt-spot=now`); Karpenter launches a replacement for the
    rescheduled attempt, which completes there."""
    gpu_name = GPU_SPOT_POOL.name
    config_update(gpu_name, GPU_SPOT_POOL.document("eks-sim"))
    assert converge(karpenter).created == [gpu_name]
    research_pool(karpenter, long_run=True)
    make_platform(gpu_name, CLI, pool="research")

    workflow = submit(job("ml-training", gpu_name, gpu=1))
    settle(karpenter, workflow, lambda w: w.status == WorkflowStatus.RUNNING, what="the first attempt running")
    task = workflow.tasks.get()
    first_node = task.node
    kube = connect(karpenter)
    kube.json("annotating", kube.core.patch_node, first_node, {"metadata": {"annotations": {REQUEST: "now"}}})
    settle(karpenter, workflow, lambda w: w.status == WorkflowStatus.COMPLETED, timeout=30, what="completed")

    task.refresh_from_db()
    assert task.retry_id == 1 and task.node not in ("", first_node)
    assert [(i["node"], i["action"], i["next_attempt"]) for i in task.interruptions] == [(first_node, "RESCHEDULE", 2)]
    (node,) = pool_nodes(karpenter, NODEPOOL, gpu_name)  # the replacement; the interrupted node is gone
    assert node.name == task.node and node.labels["karpenter.sh/capacity-type"] == "spot"
    (shown,) = researcher.get(f"/api/workflow/{workflow.workflow_id}").json()["tasks"]
    assert (shown["status"], shown["interruptions"][0]["node"]) == ("COMPLETED", first_node)
