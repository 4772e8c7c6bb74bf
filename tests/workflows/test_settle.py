"""A workflow's status from its tasks (`workflows.lifecycle.settle`): fail fast, groups and their lead."""

from __future__ import annotations

import pytest

from tests.workflows.conftest import NAMESPACE, pod_of, waiting
from workflows.lifecycle.observe import observe
from workflows.lifecycle.settle import derive_status
from workflows.models import TaskEvent


def test_one_failure_stops_the_siblings(submitted, backend, run_on_commit, monkeypatch):
    from workflows import tasks as jobs

    deleted = []
    monkeypatch.setattr(jobs.delete_pods, "delay", lambda backend_pk, targets, why: deleted.append((targets, why)))
    workflow = submitted(tasks=3)
    first, second, third = (waiting(t) for t in workflow.tasks.order_by("id"))
    run_on_commit(observe, first, pod_of(first, "Failed", exit_code=1))
    statuses = dict(workflow.tasks.values_list("name", "status"))
    assert statuses == {"t0": "FAILED", "t1": "CANCELLED", "t2": "CANCELLED"}
    assert TaskEvent.objects.get(task=second, kind="STOPPED").message == "stopped: task t0 ended FAILED"
    assert deleted == [([[NAMESPACE, second.pod_name], [NAMESPACE, third.pod_name]], "stopped")]
    workflow.refresh_from_db()
    assert workflow.status == "FAILED" and workflow.error.startswith("task t0: exited with code 1")


def grouped(ignore_non_lead_status: bool | None = None) -> dict:
    """One group: lead `client`, non-leads `server` and `sidecar`."""
    group: dict = {
        "name": "g",
        "tasks": [
            {"name": name, "image": "busybox:1.36", "command": ["sh", "-c", "true"], **({"lead": True} if lead else {})}
            for name, lead in (("client", True), ("server", False), ("sidecar", False))
        ],
    }
    if ignore_non_lead_status is not None:
        group["ignoreNonleadStatus"] = ignore_non_lead_status
    return {
        "version": 2,
        "workflow": {
            "name": "grouped",
            "groups": [group],
            "resources": {"default": {"cpu": 0.1, "memory": "64Mi", "storage": "64Mi"}},
        },
    }


def test_in_a_group_only_the_lead_counts_and_its_end_stops_the_rest(submitted, backend, run_on_commit, deleted_pods):
    workflow = submitted(grouped())
    client, server, sidecar = (waiting(workflow.tasks.get(name=n)) for n in ("client", "server", "sidecar"))
    assert all(t.ignore_non_lead_status for t in (client, server, sidecar))
    run_on_commit(observe, sidecar, pod_of(sidecar, "Failed", exit_code=1))
    workflow.refresh_from_db()
    assert workflow.status == "RUNNING"  # a non-lead failing decides nothing
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "WAITING",
        "server": "WAITING",
        "sidecar": "FAILED",
    }
    run_on_commit(observe, client, pod_of(client, "Succeeded", exit_code=0))
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "COMPLETED",
        "server": "CANCELLED",
        "sidecar": "FAILED",
    }
    assert (
        TaskEvent.objects.get(task=server, kind="STOPPED").message
        == "stopped: lead task client of group g ended COMPLETED"
    )
    assert deleted_pods == [([[NAMESPACE, server.pod_name]], "stopped")]
    workflow.refresh_from_db()
    assert (workflow.status, workflow.error) == ("COMPLETED", "")


def test_a_failing_lead_fails_the_workflow_and_stops_its_group(submitted, backend, run_on_commit, deleted_pods):
    workflow = submitted(grouped())
    client, server, sidecar = (waiting(workflow.tasks.get(name=n)) for n in ("client", "server", "sidecar"))
    run_on_commit(observe, client, pod_of(client, "Failed", exit_code=2))
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "FAILED",
        "server": "CANCELLED",
        "sidecar": "CANCELLED",
    }
    workflow.refresh_from_db()
    assert workflow.status == "FAILED" and workflow.error.startswith("task client: exited with code 2")


def test_without_ignore_non_lead_status_every_task_of_the_group_counts(submitted, backend, run_on_commit, deleted_pods):
    workflow = submitted(grouped(ignore_non_lead_status=False))
    client, server, sidecar = (waiting(workflow.tasks.get(name=n)) for n in ("client", "server", "sidecar"))
    assert not any(t.ignore_non_lead_status for t in (client, server, sidecar))
    run_on_commit(observe, client, pod_of(client, "Succeeded", exit_code=0))
    workflow.refresh_from_db()
    assert workflow.status == "RUNNING"  # the lead is done; the others still run and still count
    run_on_commit(observe, sidecar, pod_of(sidecar, "Failed", exit_code=1))
    assert dict(workflow.tasks.values_list("name", "status")) == {
        "client": "COMPLETED",
        "server": "CANCELLED",
        "sidecar": "FAILED",
    }
    workflow.refresh_from_db()
    assert workflow.status == "FAILED" and workflow.error.startswith("task sidecar:")


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], "PENDING"),
        (["PENDING", "PENDING"], "PENDING"),
        (["PENDING", "WAITING"], "WAITING"),
        (["WAITING", "RUNNING"], "RUNNING"),
        (["COMPLETED", "WAITING"], "RUNNING"),
        (["COMPLETED", "COMPLETED"], "COMPLETED"),
        (["COMPLETED", "CANCELLED"], "CANCELLED"),
        (["CANCELLED", "FAILED_EXEC_TIMEOUT"], "FAILED_EXEC_TIMEOUT"),
    ],
)
def test_workflow_status_is_derived_from_tasks(statuses, expected):
    assert derive_status(statuses) == expected
