"""Queue and exec timeouts (`workflows.timeouts`) against the simulated cluster."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tests.workflows.conftest import NAMESPACE, settle_until
from workflows import timeouts
from workflows.lifecycle.create import create_pods
from workflows.models import TaskStatus, Workflow


def test_queue_timeout(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="parked", timeout={"queue_timeout": "30s", "exec_timeout": "1h"})
    create_pods(workflow.pk)
    task = workflow.tasks.get()
    assert run_on_commit(timeouts.enforce) == {"queue_timeouts": 0, "exec_timeouts": 0}
    report = run_on_commit(timeouts.enforce, now=timezone.now() + timedelta(seconds=31))
    assert report == {"queue_timeouts": 1, "exec_timeouts": 0}
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED_QUEUE_TIMEOUT
    assert task.error.startswith("queue timeout: not running 30s after its pod was created")
    assert kube_server.emulator.list("pods", NAMESPACE) == []
    workflow.refresh_from_db()
    assert workflow.status == "FAILED_QUEUE_TIMEOUT"


def test_exec_timeout(submitted, kube_server, backend, run_on_commit):
    workflow = submitted(platform="forever", timeout={"exec_timeout": "1m"})
    create_pods(workflow.pk)
    settle_until(backend, workflow, {"RUNNING"}, run_on_commit)
    report = run_on_commit(timeouts.enforce, now=timezone.now() + timedelta(seconds=61))
    assert report == {"queue_timeouts": 0, "exec_timeouts": 1}
    task = workflow.tasks.get()
    assert task.status == TaskStatus.FAILED_EXEC_TIMEOUT and task.error == "exec timeout: still running after 1m"
    assert kube_server.emulator.list("pods", NAMESPACE) == []
    assert Workflow.objects.get(pk=workflow.pk).status == "FAILED_EXEC_TIMEOUT"
