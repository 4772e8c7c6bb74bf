"""Pods of a backend that delegates quotas to KAI-Scheduler or Kueue carry that scheduler's routing
(workflows.lifecycle.create): schedulerName and the queue labels of the workflow's project in its charged node
pool, read back from the simulated cluster."""

from __future__ import annotations

from configs import store
from quotas.models import NodePool
from quotas.services.node_pools import is_managed
from quotas.services.quotas import set_quota
from tests.factories import ProjectFactory
from tests.workflows.conftest import CLI, NAMESPACE, spec
from workflows.lifecycle import create
from workflows.models import Task, TaskStatus, Workflow, WorkflowStatus


def delegate(backend, kube_server, scheduler: str, scheduler_name: str = "") -> None:
    document = {"description": "simulated", "namespace": NAMESPACE, "api_url": kube_server.url}
    store.apply(
        "BACKEND", backend.name, {**document, "quota_scheduler": scheduler, "scheduler_name": scheduler_name}, CLI
    )


def created_pods(workflow: Workflow, kube_server) -> list[dict]:
    """Create the workflow's pods and read them back from the cluster."""
    result = create.create_pods(workflow.pk)
    assert result.created == workflow.tasks.count()
    return [kube_server.emulator.get("pods", task.pod_name, NAMESPACE) for task in workflow.tasks.order_by("id")]


def charged(workflow: Workflow, project: str | None, node_pool: str) -> Workflow:
    project_id = ProjectFactory(name=project).pk if project else None
    Workflow.objects.filter(pk=workflow.pk).update(project_id=project_id, node_pool=node_pool)
    Task.objects.filter(workflow_id=workflow.pk).update(node_pool=node_pool)  # each pod routes by its own task's
    return Workflow.objects.get(pk=workflow.pk)


def test_kai_pods_name_the_scheduler_and_the_projects_queue_in_its_node_pool(submitted, backend, kube_server):
    delegate(backend, kube_server, "kai")
    workflow = charged(submitted(spec("routed", tasks=2)), "vision", "a100")
    for pod in created_pods(workflow, kube_server):
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        labels = pod["metadata"]["labels"]
        assert (labels["kai.scheduler/queue"], labels["kai.scheduler/node-pool"]) == ("a100-vision", "a100")
        assert labels["pool-portal/instance"] == "test-portal"  # the portal's own labels stay


def test_kai_default_node_pool_and_the_backends_scheduler_name(submitted, backend, kube_server):
    delegate(backend, kube_server, "kai", scheduler_name="kai-scheduler-b")
    workflow = charged(submitted(spec("default-shard")), "vision", "sim-default")
    (pod,) = created_pods(workflow, kube_server)
    assert pod["spec"]["schedulerName"] == "kai-scheduler-b"
    assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "vision"
    assert "kai.scheduler/node-pool" not in pod["metadata"]["labels"]  # KAI's default shard


def test_kueue_pods_name_the_local_queue_and_keep_the_default_scheduler(submitted, backend, kube_server):
    delegate(backend, kube_server, "kueue")
    workflow = charged(submitted(spec("kueued")), "vision", "a100")
    (pod,) = created_pods(workflow, kube_server)
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "vision"
    assert pod["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"


def test_portal_pods_are_as_before(submitted, backend, kube_server):
    workflow = charged(submitted(spec("plain")), "vision", "a100")
    (pod,) = created_pods(workflow, kube_server)
    assert not [key for key in pod["metadata"]["labels"] if key.startswith(("kai.", "kueue."))]


def test_a_workflow_without_a_project_cannot_reach_a_queue(submitted, backend, kube_server):
    delegate(backend, kube_server, "kai")
    workflow = charged(submitted(spec("orphan")), None, "a100")
    result = create.create_pods(workflow.pk)
    assert (result.created, result.failed) == (0, 1)
    task = workflow.tasks.get()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and "must be charged to a project" in task.error
    assert kube_server.emulator.get("pods", task.pod_name, NAMESPACE) is None


def test_a_managed_node_pool_on_a_delegating_backend_leaves_admission_to_the_cluster(submitted, backend, kube_server):
    delegate(backend, kube_server, "kai")
    project = ProjectFactory(name="vision")
    set_quota(None, "sim-default", "department", project.department.name, "gpu", deserved=4)
    set_quota(None, "sim-default", "project", "vision", "gpu", deserved=4)
    assert is_managed(NodePool.objects.get(name="sim-default"))
    workflow = submitted(spec("cluster-admits"))
    assert workflow.status == WorkflowStatus.PENDING and workflow.admitted_at is not None  # not QUEUED
    assert workflow.node_pool == "sim-default"
