"""The seed's spot guidance, end to end on ROSA and on Karpenter: a training task on the GPU spot pool checkpoints
in its preStop hook onto a PersistentVolumeClaim; the cloud takes the spot node back; the node is drained through
the Eviction API, so the pod goes Terminating and its hook runs (the task's log shows it) within its grace period;
the pool's RESCHEDULE exit action re-creates the task on a new spot node, and the new attempt resumes from the
checkpoint (its log prints what the hook wrote)."""

from __future__ import annotations

import pytest

from clusters.kube.connection import connect
from configs import store
from pools.engine import default_templates
from pools.services.machine_pool_platforms import make_platform
from tests.polling import wait_until
from workflows.models import TaskEvent, WorkflowStatus

from .conftest import CLI, MACHINEPOOL, NAMESPACE, converge, pod, pool_nodes
from .test_rosa_seed_examples import ML_TRAINING

HOOK = "echo saving checkpoint at step 120; echo step 120 > /ckpt/step; sleep 5"
CHECKPOINTING = {  # what a researcher's platform adds to the task's container: the seed's preStop advice
    "metadata": {"annotations": {"kubesim/run-seconds": "3"}},
    "spec": {
        "terminationGracePeriodSeconds": 30,
        "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "train-ckpt"}}],
        "containers": [
            {
                "name": "{{USER_CONTAINER_NAME}}",
                "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}],
                "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", HOOK]}}},
            }
        ],
    },
}
NOTICE_SECONDS = 30.0  # AWS gives 120; the drain, not the node's end, stops the pod; the portal sees the node tainted


def training(name: str) -> dict:
    resources = {"cpu": 1, "memory": "1Gi", "storage": "1Gi", "gpu": 1, "platform": "ml-training"}
    task = {
        "name": "t0",
        "image": "pytorch:2",
        "command": ["sh", "-c", "cat /ckpt/step; echo training"],
        "resource": "default",
    }
    return {"version": 2, "workflow": {"name": name, "resources": {"default": resources}, "tasks": [task]}}


def task_log(researcher, workflow) -> list[str]:
    answer = researcher.get(f"/api/workflow/{workflow.workflow_id}/task/t0/logs")
    assert answer.status_code == 200, answer.json()
    return [line["text"] for line in answer.json()["lines"]]


@pytest.fixture(params=["rosa", "karpenter"])
def backend(request):
    """The GPU spot pool's backend: ROSA through OCM (`rosa-sim`), or a Karpenter NodePool (`eks-sim`)."""
    return request.getfixturevalue(request.param)


def test_a_spot_task_checkpoints_in_its_pre_stop_hook_and_resumes_from_it(backend, cloud, submit, settle, researcher):
    store.apply("MACHINE_POOL", "ml-training", {"backend": backend.name, **ML_TRAINING}, CLI)
    assert converge(backend).created == ["ml-training"]
    templates = {"default_user": default_templates()["default_user"], "checkpointing": CHECKPOINTING}
    store.apply_many("POD_TEMPLATE", templates, CLI)
    store.apply(
        "POOL",
        "research",
        {
            "backend": backend.name,
            "common_pod_template": ["default_user", "checkpointing"],
            "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
            "default_exit_actions": {"RESCHEDULE": "3001"},
        },
        CLI,
    )
    make_platform("ml-training", CLI, pool="research")

    workflow = submit(training("resumable"))  # its namespace now exists: the researcher's claim goes there
    kube = connect(backend)
    claim = {"metadata": {"name": "train-ckpt"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    claim["spec"]["resources"] = {"requests": {"storage": "10Gi"}}
    kube.json("creating the claim", kube.core.create_namespaced_persistent_volume_claim, NAMESPACE, claim)
    settle(backend, workflow, lambda w: w.status == WorkflowStatus.RUNNING, what="the first attempt running")
    task = workflow.tasks.get()
    first_node, first_pod = task.node, task.pod_name
    spec = pod(backend, first_pod)["spec"]
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["containers"][0]["lifecycle"]["preStop"]["exec"]["command"] == ["sh", "-c", HOOK]
    assert task_log(researcher, workflow) == ["cat: /ckpt/step: No such file or directory", "training"]

    cloud.interrupt_spot(first_node, notice_seconds=NOTICE_SECONDS)

    # drained: the pod is Terminating while its hook runs, and the task's log (the portal's door) shows the hook
    def hook_ran() -> list[str]:
        lines = task_log(researcher, workflow)
        return lines if "saving checkpoint at step 120" in lines else []

    lines = wait_until(hook_ran, what="the preStop hook's output in the task's log")
    assert lines[-1] == "saving checkpoint at step 120"
    raw = pod(backend, first_pod)
    assert raw["metadata"]["deletionTimestamp"] and raw["metadata"]["deletionGracePeriodSeconds"] == 30
    disruption = next(c for c in raw["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert disruption["reason"] == "EvictionByEvictionAPI"

    # the pod goes; RESCHEDULE re-creates the task on a new spot node, where it resumes from the checkpoint
    settle(
        backend,
        workflow,
        lambda w: (t := w.tasks.get()).retry_id == 1 and t.status == "RUNNING",
        timeout=60,
        what="the second attempt running",
    )
    task.refresh_from_db()
    assert task.node not in ("", first_node) and task.pod_name != first_pod
    assert task_log(researcher, workflow) == ["step 120", "training"]
    assert [(i["node"], i["action"], i["next_attempt"]) for i in task.interruptions] == [(first_node, "RESCHEDULE", 2)]
    settle(backend, workflow, lambda w: w.status == WorkflowStatus.COMPLETED, timeout=60, what="completed")
    kinds = list(TaskEvent.objects.filter(task=task).values_list("kind", flat=True))
    assert (kinds.count("SPOT_INTERRUPTION"), kinds.count("RESCHEDULED")) == (1, 1)
    assert task.node in {n.name for n in pool_nodes(backend, MACHINEPOOL, "ml-training")}
