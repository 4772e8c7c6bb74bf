"""QUEUED is the portal's word for work waiting for quota admission, in its API, CLI and pages; only OSMO's own
client (its `x-osmo-client-version` header) reads OSMO's PENDING, and its `--status PENDING` still finds it.

Node pool a100-80gb: 2 nodes × 4 A100 = 8 GPUs; vision deserves 8, so a third 4-GPU workflow waits.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.quotas import gpu_cluster as gc
from workflows.models import Workflow, WorkflowStatus

OSMO_CLIENT = {"HTTP_X_OSMO_CLIENT_VERSION": "6.4.0"}  # what OSMO's CLI sends on every request


@pytest.fixture
def queued(db, django_capture_on_commit_callbacks):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        users = gc.teams({"research": ["vision"]})
        gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 8})
        for name in ("a", "b", "c"):
            gc.submit_gpus(users["vision"], name, 4, "a100-80", django_capture_on_commit_callbacks)
        waiting = Workflow.objects.get(status=WorkflowStatus.QUEUED)
        client = APIClient()
        client.force_authenticate(users["vision"])
        yield client, waiting


def _listed(client, headers=None, **params) -> dict[str, str]:
    answer = client.get("/api/workflow", params, **(headers or {}))
    assert answer.status_code == 200, answer.content
    return {entry["workflow_id"]: entry["status"] for entry in answer.json()["workflows"]}


def test_the_portals_api_says_queued_in_lists_and_detail(queued):
    client, waiting = queued
    assert client.get(f"/api/workflow/{waiting.workflow_id}").json()["status"] == "QUEUED"
    listed = _listed(client)
    assert listed[waiting.workflow_id] == "QUEUED"
    assert sorted(listed.values()) == ["QUEUED", "WAITING", "WAITING"]
    assert _listed(client, statuses="QUEUED") == {waiting.workflow_id: "QUEUED"}
    assert waiting.workflow_id not in _listed(client, statuses="PENDING")  # the portal's PENDING is not QUEUED


def test_osmos_client_reads_pending_and_finds_it_by_pending(queued):
    client, waiting = queued
    detail = client.get(f"/api/workflow/{waiting.workflow_id}", **OSMO_CLIENT).json()
    assert detail["status"] == "PENDING" and detail["queue"]["status"] == "QUEUED"
    assert _listed(client, OSMO_CLIENT, statuses="PENDING") == {waiting.workflow_id: "PENDING"}
    assert "QUEUED" not in _listed(client, OSMO_CLIENT).values()


def test_the_cli_lists_queued_and_filters_by_it(queued):
    _, waiting = queued
    out = StringIO()
    call_command("workflow", "list", stdout=out)
    row = next(line.split() for line in out.getvalue().splitlines() if line.startswith(waiting.workflow_id))
    assert row[3] == "QUEUED"
    out = StringIO()
    call_command("workflow", "list", "--status", "QUEUED", "--format", "json", stdout=out)
    assert [w["status"] for w in json.loads(out.getvalue())["workflows"]] == ["QUEUED"]
