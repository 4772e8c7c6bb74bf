"""`GET /api/task` over DRF's test client: constant queries, bounds, status names. The same requests as OSMO's
client sends them, against gunicorn: tests/osmo_cli/test_resource_task_version.py."""

from __future__ import annotations

import pytest

from tests.factories import PoolFactory, TaskFactory, WorkflowFactory
from tests.queries import assert_constant_queries

pytestmark = pytest.mark.django_db


def pod(gpus: int) -> dict:
    return {"spec": {"containers": [{"name": "m", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}


def test_task_list_queries_are_constant(admin_api, admin_user):
    def grow():
        for index in range(5):
            workflow = WorkflowFactory(pool=PoolFactory(), submitted_by=admin_user)
            TaskFactory(workflow=workflow, status="RUNNING", node=f"n-{index}", pod=pod(1))

    grow()
    assert_constant_queries(lambda: admin_api.get("/api/task?all_users=true&limit=100"), grow=grow)
    assert_constant_queries(lambda: admin_api.get("/api/task?summary=true"), grow=grow)


def test_task_statuses_speak_both_vocabularies(admin_api, admin_user):
    workflow = WorkflowFactory(submitted_by=admin_user)
    TaskFactory(workflow=workflow, name="a", status="PENDING")
    TaskFactory(workflow=workflow, name="b", status="WAITING", node="n1")
    TaskFactory(workflow=workflow, name="c", status="CANCELLED")
    for statuses, names in (
        ("PROCESSING", ["a"]),
        ("pending", ["a"]),
        ("INITIALIZING", ["b"]),
        ("SCHEDULING", []),
        ("FAILED_CANCELED", ["c"]),
        ("FAILED_IMAGE_PULL", []),  # OSMO's, never given by the portal
    ):
        answer = admin_api.get(f"/api/task?statuses={statuses}").json()
        assert sorted(task["task_name"] for task in answer["tasks"]) == names, statuses
    refused = admin_api.get("/api/task?limit=1001")
    assert refused.status_code == 400 and refused.json()["field"] == "limit"


def test_task_list_needs_a_signed_in_caller(client):
    assert client.get("/api/task").status_code in (401, 403)
