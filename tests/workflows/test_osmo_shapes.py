"""OSMO's shapes on the workflow API that the live CLI tests (tests/osmo_cli/test_workflow.py) do not reach:
group statuses, task status names, the time format, and the submission options' refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import yaml

from tests.workflows.conftest import api, spec
from workflows.api import osmo
from workflows.models import Task, TaskStatus

SUBMIT = "/api/pool/batch/workflow"


@pytest.fixture(autouse=True)
def no_pod_creation(monkeypatch):
    from workflows import tasks as jobs

    monkeypatch.setattr(jobs.create_pods, "delay", lambda pk: None)


def task(name, status, *, lead=False, ignore=True, node="", error="", group="g") -> Task:
    now = datetime(2025, 5, 1, 12, 0, 3, 120000, tzinfo=UTC)
    return Task(
        name=name,
        group_name=group,
        lead=lead,
        ignore_non_lead_status=ignore,
        status=status,
        node=node,
        error=error,
        created_at=now,
        started_at=now if status != TaskStatus.PENDING else None,
        finished_at=now + timedelta(seconds=2) if status not in (TaskStatus.PENDING, TaskStatus.RUNNING) else None,
    )


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        ([task("a", "COMPLETED", lead=True), task("b", "CANCELLED")], "COMPLETED"),  # only the lead counts
        ([task("a", "COMPLETED", lead=True, ignore=False), task("b", "FAILED", ignore=False)], "FAILED"),
        ([task("a", "RUNNING", lead=True), task("b", "PENDING")], "RUNNING"),
        ([task("a", "PENDING", lead=True)], "PROCESSING"),
        ([task("a", "WAITING", lead=True)], "SCHEDULING"),
        ([task("a", "WAITING", lead=True, node="n1")], "INITIALIZING"),
        ([task("a", "CANCELLED", lead=True)], "FAILED_CANCELED"),
    ],
)
def test_group_status_in_osmos_names(tasks, expected):
    [group] = osmo.groups(tasks)
    assert group["status"] == expected


def test_groups_keep_task_order_and_the_first_failure():
    groups = osmo.groups(
        [task("a", "FAILED", group="g1", error="exit 3"), task("b", "COMPLETED", group="g2"), task("c", "RUNNING")]
    )
    assert [(g["name"], [t["name"] for t in g["tasks"]]) for g in groups] == [
        ("g1", ["a"]),
        ("g2", ["b"]),
        ("g", ["c"]),
    ]
    assert groups[0]["failure_message"] == "exit 3" and groups[0]["tasks"][0]["failure_message"] == "exit 3"
    assert groups[0]["start_time"] == "2025-05-01T12:00:03.120000" and groups[2]["end_time"] is None


def test_times_are_naive_utc():
    assert osmo.osmo_time(datetime(2025, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))) == "2025-05-01T12:00:00"
    assert osmo.osmo_time(None) is None


def test_submission_options_are_refused_cleanly(pool, alice):
    client = api(alice)
    both = client.post(f"{SUBMIT}?workflow_id=x-1", {"file": yaml.safe_dump(spec("x"))}, format="json")
    assert both.status_code == 400 and both.json()["field"] == "workflow_id" and both.json()["error_code"] == "USAGE"
    unknown = client.post(f"{SUBMIT}?workflow_id=nope-1", format="json")
    assert unknown.status_code == 404 and unknown.json()["code"] == "workflow_not_found"
    on_a_document = client.post(SUBMIT, {**spec("doc"), "set_variables": ["a=1"]}, format="json")
    assert on_a_document.status_code == 400 and on_a_document.json()["error_code"] == "USAGE"
    bad_env = client.post(f"{SUBMIT}?env_vars=NOEQUALS", {"file": yaml.safe_dump(spec("env"))}, format="json")
    assert bad_env.json()["field"] == "env_vars[0]" and bad_env.json()["error_code"] == "USAGE"
    bad_env_name = client.post(f"{SUBMIT}?env_vars=1BAD=x", {"file": yaml.safe_dump(spec("env"))}, format="json")
    assert bad_env_name.status_code == 400 and bad_env_name.json()["code"] == "invalid_spec"


def test_list_order_is_any_case_and_checked(pool, alice):
    assert api(alice).get("/api/workflow?order=DESC&all_pools=True").status_code == 200
    refused = api(alice).get("/api/workflow?order=sideways")
    assert refused.status_code == 400 and refused.json()["field"] == "order"


@pytest.mark.parametrize("workflow_id", ["train-1", "a b", "ünï-2", "x%y", "a:b@c~d"])
@pytest.mark.parametrize("name", ["selfservice:workflow", "workflow-logs", "workflow-detail"])
def test_a_workflow_link_is_what_reverse_gives(name, workflow_id):
    """The links every answer carries come from a pattern reversed once (osmo._workflow_path): the same
    path reverse() gives, quoting included."""
    from django.urls import reverse

    from workflows.api.osmo import _workflow_path

    assert _workflow_path(name, workflow_id) == reverse(name, args=[workflow_id])
