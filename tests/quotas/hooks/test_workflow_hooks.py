"""What workflows offer quotas (docs/quotas.md): a workflow's requests summed at submission, the QUEUED and
FAILED_PREEMPTED statuses, and how OSMO's client sees them (QUEUED is OSMO's PENDING)."""

from __future__ import annotations

from tests.workflows.conftest import api, spec
from workflows.api import osmo
from workflows.models import FINISHED_TASK, FINISHED_WORKFLOW, TaskStatus, Workflow, WorkflowStatus

MI = 2**20


def test_requests_are_the_pods_summed_in_scheduler_units(submitted):
    workflow = submitted(spec("two", tasks=2))
    pods = [task.pod["spec"]["containers"][0]["resources"]["requests"] for task in workflow.tasks.all()]
    assert len(pods) == 2
    # the default_user template asks USER_CPU=0.1 and USER_MEMORY=64Mi per task (the spec's resources)
    assert workflow.requests == {"gpu": 0, "cpu": 2 * 100, "memory": 2 * 64 * MI}
    # charged to the backend's Default node pool, which has no quotas: admitted at once, as before quotas
    assert (workflow.node_pool, workflow.status, workflow.preemptible) == ("sim-default", "PENDING", False)
    assert workflow.admitted_at is not None
    assert (workflow.queue_reason, workflow.preemption) == ({}, {})


def test_queued_is_pending_only_to_osmos_client_and_preempted_is_finished(submitted, alice):
    queued, preempted = submitted(spec("waits")), submitted(spec("stopped"))
    Workflow.objects.filter(pk=queued.pk).update(status=WorkflowStatus.QUEUED)
    Workflow.objects.filter(pk=preempted.pk).update(status=WorkflowStatus.FAILED_PREEMPTED)
    assert WorkflowStatus.FAILED_PREEMPTED in FINISHED_WORKFLOW and TaskStatus.FAILED_PREEMPTED in FINISHED_TASK
    assert WorkflowStatus.QUEUED not in FINISHED_WORKFLOW
    client, osmo_client = api(alice), {"HTTP_X_OSMO_CLIENT_VERSION": "6.4.0"}  # OSMO's CLI sends its version
    assert client.get(f"/api/workflow/{queued.workflow_id}").json()["status"] == "QUEUED"
    assert client.get(f"/api/workflow/{queued.workflow_id}", **osmo_client).json()["status"] == "PENDING"
    assert client.get(f"/api/workflow/{preempted.workflow_id}").json()["status"] == "FAILED_PREEMPTED"
    listed = client.get("/api/workflow?statuses=PENDING", **osmo_client).json()["workflows"]
    assert {w["workflow_id"] for w in listed} == {queued.workflow_id}
    assert osmo.stored_statuses(["pending", "QUEUED", "FAILED_CANCELED"]) == ["PENDING", "QUEUED", "CANCELLED"]
    assert osmo.workflow_status(WorkflowStatus.QUEUED) == "PENDING"
