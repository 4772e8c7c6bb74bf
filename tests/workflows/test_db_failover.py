"""A database connection killed in the middle of a request costs the client nothing (issue #31 point 4).

The request's own PostgreSQL backend is ended with `pg_terminate_backend` from another session
(tests/sessions.py) at a chosen statement (a Django execute wrapper: deterministic, no sleep), as a
failover or a restart would end it. Reads run again on a new connection; a submission runs again too,
keyed by its request id (portal.dbretry, workflows.services), so the client gets one success and exactly
one workflow; a second loss is a 503 envelope, never a 500.
"""

from __future__ import annotations

import contextlib

import pytest
import yaml
from django.db import connection

from tests.polling import wait_until
from tests.sessions import other_session
from tests.workflows.conftest import api, spec
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)  # the request's connection is the one killed
SUBMIT = "/api/pool/batch/workflow"
INSERT_WORKFLOW = 'INSERT INTO "workflows_workflow"'


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    from workflows import tasks as jobs

    monkeypatch.setattr(jobs.create_pods, "delay", lambda *args: None)


def terminate(pid: int) -> None:
    with other_session() as other:
        assert other.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        gone = "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = %s)"
        wait_until(lambda: other.execute(gone, (pid,)).fetchone()[0], what=f"backend {pid} to end")


@contextlib.contextmanager
def killed_at(marker: str, times: int = 1):
    """End the connection's backend just before each of the first `times` statements containing `marker`."""
    kills: list[int] = []

    def wrapper(execute, sql, params, many, context):
        if marker in sql and len(kills) < times:
            pid = context["connection"].connection.info.backend_pid
            terminate(pid)
            kills.append(pid)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield kills


def test_a_submission_whose_connection_dies_before_commit_succeeds_once(pool, alice):
    client = api(alice)
    with killed_at(INSERT_WORKFLOW) as kills:
        answer = client.post(SUBMIT, yaml.safe_dump(spec("failover")), content_type="application/yaml")

    assert len(kills) == 1  # the first run's INSERT was on a connection that ended under it
    assert answer.status_code == 200, answer.content
    assert answer.json()["workflow_id"] == "failover-1"
    assert list(Workflow.objects.values_list("workflow_id", flat=True)) == ["failover-1"]


def test_the_same_request_id_sent_again_answers_the_stored_workflow(pool, alice):
    """What a retry after a commit the client never heard of sees: the workflow stored, not a second one."""
    client = api(alice)
    document = yaml.safe_dump(spec("once"))
    first = client.post(SUBMIT, document, content_type="application/yaml", HTTP_X_REQUEST_ID="submit-7")
    again = client.post(SUBMIT, document, content_type="application/yaml", HTTP_X_REQUEST_ID="submit-7")
    other = client.post(SUBMIT, document, content_type="application/yaml", HTTP_X_REQUEST_ID="submit-8")

    assert first.status_code == again.status_code == other.status_code == 200
    assert again.json()["workflow_id"] == first.json()["workflow_id"] == "once-1"
    assert again.json()["tasks"] == first.json()["tasks"]
    assert other.json()["workflow_id"] == "once-2"
    assert Workflow.objects.count() == 2


def test_another_user_with_the_same_request_id_gets_their_own_workflow(pool, alice, carol):
    document = yaml.safe_dump(spec("mine"))
    answers = [
        api(user).post(SUBMIT, document, content_type="application/yaml", HTTP_X_REQUEST_ID="shared-id")
        for user in (alice, carol)
    ]
    assert [a.json()["workflow_id"] for a in answers] == ["mine-1", "mine-2"]


def test_a_read_whose_connection_dies_is_answered(pool, alice):
    client = api(alice)
    client.post(SUBMIT, yaml.safe_dump(spec("listed")), content_type="application/yaml")
    with killed_at('FROM "workflows_workflow"') as kills:
        listed = client.get("/api/workflow")
    assert len(kills) == 1
    assert listed.status_code == 200 and listed.json()["workflows"][0]["workflow_id"] == "listed-1"


def test_a_second_loss_is_a_503_and_stores_nothing(pool, alice):
    client = api(alice)
    with killed_at(INSERT_WORKFLOW, times=2) as kills:
        answer = client.post(SUBMIT, yaml.safe_dump(spec("twice")), content_type="application/yaml")

    assert len(kills) == 2  # the first run and its one retry
    assert answer.status_code == 503 and answer["Retry-After"] == "1"
    body = answer.json()
    assert body["code"] == "database_unavailable" and "connection was lost" in body["reason"]
    assert not Workflow.objects.exists()


def test_a_write_that_is_not_keyed_is_not_run_twice(pool, alice):
    """A cancel lost mid-way is a 503 (the client decides whether to send it again), not a silent second run."""
    client = api(alice)
    client.post(SUBMIT, yaml.safe_dump(spec("stopping")), content_type="application/yaml")
    with killed_at('UPDATE "workflows_', times=2) as kills:
        answer = client.post("/api/workflow/stopping-1/cancel", {}, format="json")
    assert len(kills) == 1
    assert answer.status_code == 503 and answer.json()["code"] == "database_unavailable"
