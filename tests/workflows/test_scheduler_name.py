"""The backend's `scheduler_name` reaches every pod the portal creates (spec.schedulerName), over the
template's, for first attempts and for rescheduled ones; an empty one leaves the cluster's default."""

from __future__ import annotations

from configs import store
from tests.workflows.conftest import CLI, NAMESPACE
from workflows.lifecycle.create import create_pods
from workflows.services import resolve_retry


def name_the_scheduler(kube_server, scheduler_name: str) -> None:
    store.apply(
        "BACKEND",
        "sim",
        {
            "description": "simulated",
            "namespace": NAMESPACE,
            "api_url": kube_server.url,
            "scheduler_name": scheduler_name,
        },
        CLI,
    )


def test_every_created_pod_names_the_backends_scheduler(pool, submitted, kube_server):
    name_the_scheduler(kube_server, "kai-scheduler")
    workflow = submitted(tasks=2)
    assert create_pods(workflow.pk).created == 2
    for task in workflow.tasks.order_by("name"):
        assert task.pod["spec"]["schedulerName"] == "kai-scheduler"  # the stored manifest says so too
        pod = kube_server.emulator.get("pods", task.pod_name, NAMESPACE)
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert "nodeName" not in pod["spec"]  # the default scheduler (kubesim's) leaves it to kai-scheduler
        retry = resolve_retry(workflow, task, 1)
        assert retry["spec"]["schedulerName"] == "kai-scheduler"


def test_the_backends_scheduler_wins_over_a_template(pool, submitted, kube_server):
    store.apply("POD_TEMPLATE", "cpu", {"spec": {"nodeSelector": {"x": "y"}, "schedulerName": "volcano"}}, CLI)
    assert submitted().tasks.get().pod["spec"]["schedulerName"] == "volcano"  # no backend scheduler: the template's
    name_the_scheduler(kube_server, "my-scheduler")
    workflow = submitted()
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    assert kube_server.emulator.get("pods", task.pod_name, NAMESPACE)["spec"]["schedulerName"] == "my-scheduler"


def test_no_scheduler_name_leaves_the_cluster_default(pool, submitted, kube_server):
    workflow = submitted()
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    assert "schedulerName" not in task.pod["spec"]
    assert kube_server.emulator.get("pods", task.pod_name, NAMESPACE)["spec"]["schedulerName"] == "default-scheduler"
