"""A pod's status folded back into its task (`workflows.lifecycle.observe`), from the reconciler and directly."""

from __future__ import annotations

from django.utils import timezone

from tests.workflows.conftest import NAMESPACE, events, pod_of, settle_until, wait_until
from workflows import reconcile
from workflows.lifecycle.create import create_pods
from workflows.lifecycle.observe import observe
from workflows.models import Task, TaskEvent, TaskStatus


def test_status_flows_back_from_the_pod(submitted, kube_server, backend, run_on_commit):
    workflow = submitted()
    create_pods(workflow.pk)
    settle_until(backend, workflow, {"COMPLETED"}, run_on_commit)
    task = workflow.tasks.get()
    assert task.status == TaskStatus.COMPLETED and task.exit_code == 0
    assert task.node.startswith("cpu-node-") and task.started_at and task.finished_at
    assert workflow.started_at and workflow.finished_at
    kinds = [kind for _, kind in events(workflow)]
    assert kinds == ["SUBMITTED", "CREATED", "SCHEDULED", "RUNNING", "EXITED"]
    exited = TaskEvent.objects.get(task=task, kind="EXITED").message
    assert exited.startswith("exited with code 0: COMPLETED")


def test_observations_are_idempotent_and_may_skip_states(submitted, backend):
    workflow = submitted()
    task = workflow.tasks.select_related("workflow__pool").get()
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.WAITING, pod_created_at=timezone.now())
    task.refresh_from_db()
    done = pod_of(task, "Succeeded", exit_code=0)
    assert observe(task, done) is True
    assert observe(Task.objects.select_related("workflow__pool").get(pk=task.pk), done) is False
    kinds = [kind for _, kind in events(workflow)]
    assert kinds == ["SUBMITTED", "SCHEDULED", "RUNNING", "EXITED"]
    workflow.refresh_from_db()
    assert workflow.status == "COMPLETED"


def test_unschedulable_reason_is_an_event_once_per_reason(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="nowhere")
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    wait_until(
        lambda: (
            run_on_commit(reconcile.reconcile_backend, backend.pk)
            and Task.objects.get(pk=task.pk).error.startswith("Unschedulable")
        )
    )
    for _ in range(3):
        run_on_commit(reconcile.reconcile_backend, backend.pk)
    unschedulable = TaskEvent.objects.filter(task=task, kind="UNSCHEDULABLE")
    assert unschedulable.count() == 1
    assert "didn't match Pod's node affinity/selector" in unschedulable.get().message
    assert Task.objects.get(pk=task.pk).status == TaskStatus.WAITING


def test_a_pod_deleted_behind_our_back_fails_the_task(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="forever")
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    settle_until(backend, workflow, {"RUNNING"}, run_on_commit)
    kube_server.emulator.delete("pods", task.pod_name, NAMESPACE)
    run_on_commit(reconcile.reconcile_backend, backend.pk)
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and "no longer exists" in task.error
    assert TaskEvent.objects.filter(task=task, kind="POD_LOST").count() == 1
