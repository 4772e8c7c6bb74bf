"""Creating pods (`workflows.lifecycle.create`) against the simulated cluster: the stored manifest, idempotence,
adoption, refusals and transient errors."""

from __future__ import annotations

import pytest

from clusters.kube import pods
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from tests.workflows.conftest import NAMESPACE, events
from workflows.lifecycle.cancel import cancel
from workflows.lifecycle.create import create_pods, fail_pending, manifest
from workflows.models import Task, TaskEvent, TaskStatus, Workflow


def test_pod_is_the_stored_manifest_plus_the_instance_label(submitted, kube_server, backend):
    workflow = submitted()
    task = workflow.tasks.get()
    kube_server.emulator.clear_request_log()
    result = create_pods(workflow.pk)
    assert (result.created, result.adopted, result.failed) == (1, 0, 0)
    posted = [r for r in kube_server.emulator if r.method == "POST" and r.url.path.endswith("/pods")]
    expected = {
        **task.pod,
        "metadata": {
            **task.pod["metadata"],
            "labels": {**task.pod["metadata"]["labels"], "pool-portal/instance": "test-portal"},
        },
    }
    assert posted[-1].data == expected
    # typed substitution gives JSON numbers; they go out as they are (the typed client would refuse them)
    assert expected["spec"]["containers"][0]["resources"]["requests"]["cpu"] == 0.1
    stored = kube_server.emulator.get("pods", task.pod_name, NAMESPACE)
    assert stored["metadata"]["labels"] == expected["metadata"]["labels"]
    assert stored["spec"]["containers"] == task.pod["spec"]["containers"]
    # the platform's selector, and the node pool's the pod is confined to (docs/quotas.md, "Confinement")
    assert stored["spec"]["nodeSelector"] == {
        "hive.openshift.io/machine-pool": "cpu",
        "pool-portal/node-pool": "sim-default",
    }
    task.refresh_from_db()
    assert task.status == TaskStatus.WAITING and task.pod_uid == stored["metadata"]["uid"] and task.pod_created_at
    assert events(workflow) == [("t0", "SUBMITTED"), ("t0", "CREATED")]
    assert Workflow.objects.get(pk=workflow.pk).status == "WAITING"


def test_creating_twice_creates_one_pod_and_one_event(submitted, kube_server, backend):
    workflow = submitted(tasks=3)
    create_pods(workflow.pk)
    again = create_pods(workflow.pk)
    assert (again.created, again.adopted) == (0, 0)
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 3
    assert [kind for _, kind in events(workflow)].count("CREATED") == 3


def test_a_worker_that_died_after_the_post_is_recovered(submitted, kube_server, backend):
    """The pod was created but the row still says PENDING (worker killed before the UPDATE): a redelivered
    message adopts the pod instead of failing or creating another."""
    workflow = submitted()
    task = workflow.tasks.get()
    with connect(backend) as kube:
        pods.create_pod(kube, NAMESPACE, manifest(task))
    result = create_pods(workflow.pk)
    assert (result.created, result.adopted) == (0, 1)
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 1
    assert Task.objects.get(pk=task.pk).status in (TaskStatus.WAITING, TaskStatus.RUNNING, TaskStatus.COMPLETED)
    assert "adopted" in TaskEvent.objects.get(task=task, kind="CREATED").message


def test_a_4xx_fails_the_task_with_the_api_message_and_is_not_retried(submitted, kube_server, backend):
    workflow = submitted()
    kube_server.emulator.fail_next("create", "pods", status=403, message="pods is forbidden: exceeded quota: gpu")
    result = create_pods(workflow.pk)
    assert result.failed == 1
    task = workflow.tasks.get()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR
    assert "HTTP 403" in task.error and "exceeded quota: gpu" in task.error
    workflow.refresh_from_db()
    assert workflow.status == "FAILED_BACKEND_ERROR" and workflow.finished_at and "exceeded quota" in workflow.error
    assert kube_server.emulator.list("pods", NAMESPACE) == []


def test_someone_elses_pod_of_the_same_name_fails_the_task(submitted, kube_server, backend, alice, run_on_commit):
    workflow = submitted()
    task = workflow.tasks.get()
    kube_server.emulator.create("namespaces", {"metadata": {"name": NAMESPACE}})
    kube_server.emulator.create(
        "pods",
        {
            "metadata": {"name": task.pod_name, "labels": {"app": "theirs"}},
            "spec": {"containers": [{"name": "x", "image": "x"}]},
        },
        NAMESPACE,
    )
    create_pods(workflow.pk)
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and "is not this task's" in task.error
    run_on_commit(cancel, workflow.workflow_id, alice, force=True)  # cleans up ours only
    assert kube_server.emulator.get("pods", task.pod_name, NAMESPACE) is not None


def test_a_transient_error_propagates_and_leaves_the_task_pending(submitted, kube_server, backend):
    workflow = submitted(tasks=2)
    create_pods(workflow.pk)  # both created
    second = submitted(name="again", tasks=2)
    kube_server.emulator.fail_next("create", "pods", status=503)
    with pytest.raises(KubeError) as caught:
        create_pods(second.pk)
    assert caught.value.transient
    assert set(second.tasks.values_list("status", flat=True)) == {TaskStatus.PENDING}
    create_pods(second.pk)
    assert set(second.tasks.values_list("status", flat=True)) <= {TaskStatus.WAITING, TaskStatus.RUNNING}


def test_retries_exhausted_fail_the_pending_tasks(submitted, backend):
    workflow = submitted()
    assert fail_pending(workflow.pk, "gave up after 9 attempts: HTTP 503") == 1
    workflow.refresh_from_db()
    assert workflow.status == "FAILED_BACKEND_ERROR" and "gave up after 9 attempts" in workflow.error
