"""The seed's first two usage examples on ROSA, from the MACHINE_POOL definition to pods running on the
simulated cluster (issue #14, "Proof"): the machine pool is defined through a config door with the seed's
values, reconciled to OCM, turned into nodes by the cloud, synced into the inventory, made a platform, and a
researcher's workflow submitted by the REST API runs on a node of that machine pool."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from clusters.models import MachinePool, Node
from configs import store
from pools.services.machine_pool_platforms import make_platform
from pools.services.preview import PreviewRequest, preview
from tests.polling import wait_until
from workflows.models import TaskEvent, WorkflowStatus

from .conftest import CLI, MACHINEPOOL, OCM_CLUSTER, converge, in_default, job, pod, pods, pool_nodes, research_pool

BATCH_WORKERS = {  # seed 004, "Basic Additional Pool"
    "instance_type": "m5.2xlarge",
    "autoscaling": {"min_replicas": 2, "max_replicas": 10},
    "labels": {"workload-type": "batch", "team": "data-engineering"},
    "taints": [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}],
    "spot": False,
}
ML_TRAINING = {  # seed 004, "GPU Spot Pool for ML Training" (the module's GPU spot pool taints)
    "instance_type": "p3.2xlarge",
    "autoscaling": {"min_replicas": 0, "max_replicas": 5},
    "disk_size": 500,
    "labels": {"ml-framework": "pytorch"},
    "taints": [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    ],
    "spot": True,
}
COMPLETED = lambda workflow: workflow.status == WorkflowStatus.COMPLETED  # noqa: E731


def test_basic_additional_pool_runs_the_batch_job_on_its_nodes(
    rosa, cloud, admin_api, submit, settle, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # the save queues the reconcile task (eager here)
        answer = admin_api.put(
            "/api/configs/machine_pool/batch-workers",
            {"configs": {"backend": "rosa-sim", **BATCH_WORKERS}, "description": "seed: basic additional pool"},
            format="json",
        )
    assert answer.status_code == 200, answer.json()

    row = MachinePool.objects.get(name="batch-workers")
    assert (row.state, row.last_answer) == (MachinePool.State.SCALING, "created at rosa")  # no node yet
    held = cloud.emulator.ocm_pool(OCM_CLUSTER, "batch-workers")
    assert (held["instance_type"], held["autoscaling"]) == ("m5.2xlarge", {"min_replicas": 2, "max_replicas": 10})
    assert BATCH_WORKERS["labels"].items() <= held["labels"].items()
    assert held["taints"] == BATCH_WORKERS["taints"]
    nodes = pool_nodes(rosa, MACHINEPOOL, "batch-workers", at_least=2)
    assert len(nodes) == 2  # the minimum, nothing asked more yet
    for node in nodes:
        assert node.labels["workload-type"] == "batch" and node.labels["team"] == "data-engineering"
        assert node.labels["node.kubernetes.io/instance-type"] == "m5.2xlarge"
        assert node.taints == [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}]

    research_pool(rosa)
    out = StringIO()
    call_command("machinepool", "platform", "batch-workers", "--pool", "research", stdout=out)
    assert "platform research/batch-workers created from machine pool batch-workers" in out.getvalue()

    workflow = submit(job("batch-job", "batch-workers"))
    settle(rosa, workflow, COMPLETED)

    task = workflow.tasks.get()
    assert task.node in {n.name for n in nodes}
    spec = pod(rosa, task.pod_name)["spec"]
    assert spec["nodeSelector"] == in_default(rosa, {MACHINEPOOL: "batch-workers"})  # the seed's batch Job, confined
    assert {"key": "workload-type", "operator": "Equal", "value": "batch", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]
    assert converge(rosa).in_step == ["batch-workers"]
    row.refresh_from_db()
    assert (row.state, row.nodes_now, row.nodes_ready) == (MachinePool.State.READY, 2, 2)


def test_gpu_spot_pool_scales_from_zero_and_a_spot_interruption_reschedules_the_task(
    rosa, cloud, submit, settle, researcher
):
    store.apply("MACHINE_POOL", "ml-training", {"backend": "rosa-sim", **ML_TRAINING}, CLI)
    assert converge(rosa).created == ["ml-training"]
    held = cloud.emulator.ocm_pool(OCM_CLUSTER, "ml-training")
    assert held["autoscaling"] == {"min_replicas": 0, "max_replicas": 5} and "spot_market_options" in held["aws"]
    assert held["root_volume"] == {"aws": {"size": 500}}
    research_pool(rosa, long_run=True)
    made = make_platform("ml-training", CLI, pool="research")
    assert (made.platform, made.created) == ("ml-training", True)
    pool_nodes(rosa, "kubernetes.io/os", "linux")  # ROSA's default worker: the inventory is synced
    assert not MachinePool.objects.get(name="ml-training").nodes_ready
    assert not Node.objects.filter(backend=rosa, labels__contains={MACHINEPOOL: "ml-training"}).exists()

    # scale from zero: no node now, the preview says the machine pool can add one
    seen = preview(PreviewRequest(pool="research", platform="ml-training", resources={"gpu": 1}))
    assert any(
        w.startswith("no node now; machine pool ml-training can add a p3.2xlarge") and w.endswith("up to 5")
        for w in seen["warnings"]
    ), seen["warnings"]

    # the researcher's dry run places the pod on the node the machine pool would add
    document = job("ml-training", "ml-training", gpu=1)
    dry = researcher.post("/api/pool/research/workflow?dry_run=true", document, format="json")
    assert dry.status_code == 200, dry.json()
    would_be = "ml-training (would-be p3.2xlarge)"
    assert dry.json()["tasks"][0]["placement"] == {
        "fits": [would_be],
        "rejected": {},
        "would_be": {would_be: "no node now; machine pool ml-training can add a p3.2xlarge, 1 × V100; up to 5"},
    }
    workflow = submit(job("ml-training", "ml-training", gpu=1))
    settle(rosa, workflow, lambda w: w.status == WorkflowStatus.RUNNING, what="the first attempt running")
    task = workflow.tasks.get()
    first_node, first_pod = task.node, task.pod_name
    (node,) = pool_nodes(rosa, MACHINEPOOL, "ml-training")
    assert node.name == first_node and node.labels["ml-framework"] == "pytorch"
    assert node.labels["node.kubernetes.io/capacity-type"] == "spot"
    assert node.labels["node.kubernetes.io/instance-type"] == "p3.2xlarge"
    spec = pod(rosa, first_pod)["spec"]
    assert spec["nodeSelector"] == in_default(rosa, {MACHINEPOOL: "ml-training"})
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] in (1, "1")
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]

    # the cloud takes the spot node back while the task runs: the pool's default_exit_actions reschedule it
    cloud.interrupt_spot(first_node, notice_seconds=0.3)
    settle(rosa, workflow, COMPLETED, timeout=30, what="the second attempt completed")

    task.refresh_from_db()
    assert task.retry_id == 1 and task.node not in ("", first_node)
    assert (task.interruptions[0]["node"], task.interruptions[0]["action"]) == (first_node, "RESCHEDULE")
    kinds = list(TaskEvent.objects.filter(task=task).values_list("kind", flat=True))
    assert (kinds.count("SPOT_INTERRUPTION"), kinds.count("RESCHEDULED"), kinds.count("CREATED")) == (1, 1, 2)
    assert "the pool's default_exit_actions: RESCHEDULE" in TaskEvent.objects.get(task=task, kind="RESCHEDULED").message
    wait_until(lambda: [p["metadata"]["name"] for p in pods(rosa)] == [task.pod_name], what="one pod per attempt")
    assert task.node in {n.name for n in pool_nodes(rosa, MACHINEPOOL, "ml-training")}  # the node the pool added
    assert converge(rosa).in_step == ["ml-training"]  # the cloud replacing a node is no drift
    body = researcher.get(f"/api/workflow/{workflow.workflow_id}").json()
    (shown,) = body["tasks"]
    assert shown["retry_id"] == 1 and shown["status"] == "COMPLETED"
    assert [(i["node"], i["attempt"], i["pod"], i["next_attempt"]) for i in shown["interruptions"]] == [
        (first_node, 1, first_pod, 2)
    ]
