"""Cancelling a workflow (`workflows.lifecycle.cancel`): pods deleted, who may, a race with pod creation."""

from __future__ import annotations

import pytest

from clusters.kube import pods
from portal.errors import PermissionDenied
from tests.workflows.conftest import NAMESPACE
from workflows.errors import WorkflowFinished
from workflows.lifecycle.cancel import cancel
from workflows.lifecycle.create import create_pods
from workflows.models import TaskEvent, TaskStatus


def test_cancel_deletes_pods_and_marks_unfinished_tasks(submitted, kube_server, backend, alice, run_on_commit):
    workflow = submitted(platform="forever", tasks=2)
    create_pods(workflow.pk)
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 2
    cancelled = run_on_commit(cancel, workflow.workflow_id, alice, message="wrong data")
    assert cancelled.status == "CANCELLED" and cancelled.finished_at
    assert set(workflow.tasks.values_list("status", flat=True)) == {"CANCELLED"}
    assert kube_server.emulator.list("pods", NAMESPACE) == []
    assert (
        TaskEvent.objects.filter(task__workflow=workflow, kind="CANCELLED").first().message
        == "cancelled by alice: wrong data"
    )
    with pytest.raises(WorkflowFinished) as caught:
        cancel(workflow.workflow_id, alice)
    assert (caught.value.status, caught.value.code) == (409, "workflow_finished")
    assert run_on_commit(cancel, workflow.workflow_id, alice, force=True).status == "CANCELLED"


def test_cancel_is_for_the_submitter_or_workflow_cancel_on_the_pool(submitted, bob, carol):
    workflow = submitted()
    with pytest.raises(PermissionDenied) as caught:
        cancel(workflow.workflow_id, bob)
    assert caught.value.status == 403 and "bob may not cancel" in caught.value.reason
    assert cancel(workflow.workflow_id, carol).status == "CANCELLED"  # osmo-batch: workflow:* on batch*


def test_a_pod_created_after_cancel_is_deleted(submitted, kube_server, backend, alice, run_on_commit, monkeypatch):
    """Cancel lands while create_pods is between its POST and its UPDATE: the pod is deleted, not adopted."""
    workflow = submitted()
    real_create = pods.create_pod

    def create_then_cancel(kube, namespace, manifest):
        outcome = real_create(kube, namespace, manifest)
        cancel(workflow.workflow_id, alice)
        return outcome

    monkeypatch.setattr(pods, "create_pod", create_then_cancel)
    run_on_commit(create_pods, workflow.pk)
    assert workflow.tasks.get().status == TaskStatus.CANCELLED
    assert kube_server.emulator.list("pods", NAMESPACE) == []
