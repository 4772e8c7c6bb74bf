"""The live workflow page: the timeline (local times, durations between steps, phases, ticking clocks), exit
codes with reasons, who or what ended a task, and the log pane's endpoint (authorization and notices)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from clusters.models import Backend
from tests.queries import assert_constant_queries
from tests.selfservice.conftest import TRAINING
from tests.selfservice.test_pages import SPEC, text
from workflows.models import Task, TaskEvent, TaskStatus, Workflow, WorkflowStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(demo_world):
    demo_world.client(demo_world.researcher).post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    return Workflow.objects.get()


def _ran(workflow, *, status, exit_code, reason="", message="", seconds=60):
    """The task was scheduled 4 s after submission, ran 2 s later, and ended `seconds` after that."""
    task = workflow.tasks.get()
    t0 = task.created_at
    TaskEvent.objects.create(task=task, kind="SCHEDULED", at=t0 + timedelta(seconds=4), message="on h100-node-1")
    TaskEvent.objects.create(task=task, kind="RUNNING", at=t0 + timedelta(seconds=6), message="running")
    end = t0 + timedelta(seconds=6 + seconds)
    TaskEvent.objects.create(task=task, kind="EXITED", at=end, message=f"exited with code {exit_code}")
    Task.objects.filter(pk=task.pk).update(
        status=status,
        node="h100-node-1",
        exit_code=exit_code,
        exit_reason=reason,
        exit_message=message,
        started_at=t0 + timedelta(seconds=6),
        finished_at=end,
        pod_created_at=t0,
    )
    Workflow.objects.filter(pk=workflow.pk).update(status=status, started_at=t0, finished_at=end)
    return task


def test_timeline_shows_durations_between_steps_phases_and_the_total(demo_world, submitted):
    _ran(submitted, status=TaskStatus.COMPLETED, exit_code=0, reason="Completed")
    page = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/")
    words = text(page)
    assert "Submitted" in words and "+4s Scheduled on h100-node-1" in words and "+2s Running" in words
    assert "+1m 00s Exited" in words
    assert "queued 4s starting 2s running 1m 00s total 1m 06s" in words
    assert "Completed: exit code 0" in words and "took 1m 06s" in words
    html = page.content.decode()
    created = submitted.created_at
    assert f'Submitted <time datetime="{created.isoformat()}" data-local>' in html  # the browser shows it locally
    assert "data-elapsed-from" not in html.split('id="events"')[1]  # finished: no clock ticks
    assert 'data-kind="SUBMITTED"' in html


def test_steps_of_one_instant_are_shown_in_the_order_they_happen(demo_world, submitted):
    """Events recorded before their times were made distinct share the submission's microsecond, and their rows
    are in the order the portal learned of them: the page shows them as they happened."""
    task = submitted.tasks.get()
    TaskEvent.objects.filter(task=task).exclude(kind="SUBMITTED").delete()
    for kind in ("SCHEDULED", "CREATED", "ADMITTED"):
        TaskEvent.objects.create(task=task, kind=kind, at=task.created_at)
    html = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/").content.decode()
    kinds = re.findall(r'data-kind="([A-Z_]+)"', html.split('id="events"')[1])
    assert kinds == ["SUBMITTED", "ADMITTED", "CREATED", "SCHEDULED"]


def test_a_running_task_has_clocks_that_tick_from_its_start(demo_world, submitted):
    task = submitted.tasks.get()
    started = task.created_at + timedelta(seconds=3)
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.RUNNING, started_at=started, node="h100-node-1")
    Workflow.objects.filter(pk=submitted.pk).update(status=WorkflowStatus.RUNNING, started_at=started)
    html = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/").content.decode()
    assert f'id="workflow-elapsed" data-elapsed-from="{started.isoformat()}"' in html
    assert html.count("data-elapsed-from=") == 4  # the workflow's, and the task's queued, running and total


def test_an_oom_killed_task_says_its_exit_code_reason_and_message(demo_world, submitted):
    _ran(submitted, status=TaskStatus.FAILED, exit_code=137, reason="OOMKilled", message="memory limit 64Gi")
    page = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/")
    words = text(page)
    assert "Failed: exit code 137 (OOMKilled) at" in words and "memory limit 64Gi" in words
    assert re.search(r'id="exit-train">137 <span class="badge bad">OOMKilled</span>', page.content.decode())


def test_a_cancelled_task_says_who_cancelled_it_and_when(demo_world, submitted):
    client = demo_world.client(demo_world.researcher)
    client.post(f"/workflows/{submitted.workflow_id}/cancel/", {"message": "wrong learning rate"})
    submitted.refresh_from_db()
    assert submitted.cancelled_by == "researcher"
    page = client.get(f"/workflows/{submitted.workflow_id}/")
    finished = submitted.tasks.get().finished_at
    assert "Cancelled by researcher at" in text(page) and "wrong learning rate" in text(page)
    assert 'id="ending-train"' in page.content.decode()
    assert f'<time datetime="{finished.isoformat()}" data-local>' in page.content.decode()


@pytest.mark.parametrize(
    ("status", "workflow_fields", "expected"),
    [
        (TaskStatus.FAILED_EXEC_TIMEOUT, {"exec_timeout_seconds": 7200}, "Timed out after 2h 00m running"),
        (TaskStatus.FAILED_QUEUE_TIMEOUT, {"queue_timeout_seconds": 600}, "Timed out after 10m 00s in the queue"),
        (
            TaskStatus.FAILED_PREEMPTED,
            {"preemption": {"by": "vision/eval-3", "reason": "reclaim"}},
            "Preempted by vision/eval-3",
        ),
        (TaskStatus.FAILED_BACKEND_ERROR, {}, "Failed in the cluster"),
    ],
)
def test_what_ended_a_failed_task(demo_world, submitted, status, workflow_fields, expected):
    task = submitted.tasks.get()
    Task.objects.filter(pk=task.pk).update(status=status, finished_at=task.created_at, error="the reason")
    Workflow.objects.filter(pk=submitted.pk).update(status=status, **workflow_fields)
    words = text(demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/"))
    assert f"{expected} at" in words and "the reason" in words


def test_the_page_runs_as_many_queries_with_more_tasks_and_events(demo_world, submitted):
    client = demo_world.client(demo_world.researcher)

    def grow():
        first = submitted.tasks.get()
        for index in range(3):
            extra = Task.objects.create(
                workflow=submitted, name=f"extra{index}", group_name="g", platform=first.platform, pod_name=f"p{index}"
            )
            TaskEvent.objects.create(task=extra, kind="SUBMITTED", message="submitted")
            TaskEvent.objects.create(task=extra, kind="SCHEDULED", message="scheduled")

    assert_constant_queries(lambda: client.get(f"/workflows/{submitted.workflow_id}/"), grow)


# --- the log pane's endpoint ------------------------------------------------------------------------------


def test_log_endpoint_says_why_there_is_no_log_yet(demo_world, submitted):
    response = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/tasks/train/log/")
    body = response.json()
    assert response.status_code == 200 and body["lines"] == [] and body["state"] == "no_pod"
    assert body["notice"] == "No log yet: the task's pod has not been created."


def test_log_endpoint_with_the_cluster_unreachable_is_a_notice_not_an_error(demo_world, submitted):
    Backend.objects.update(api_url="http://127.0.0.1:9")
    task = submitted.tasks.get()
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.RUNNING, pod_created_at=task.created_at)
    response = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/tasks/train/log/")
    assert response.status_code == 200 and response.json()["state"] == "unreachable"
    assert "did not answer, so the log cannot be shown now" in response.json()["notice"]


def test_log_endpoint_refuses_others_and_bad_input(demo_world, submitted):
    url = f"/workflows/{submitted.workflow_id}/tasks/train/log/"
    hidden = demo_world.client(demo_world.nobody).get(url)
    assert hidden.status_code == 404 and hidden.json()["code"] == "workflow_not_found"
    client = demo_world.client(demo_world.researcher)
    assert client.get(f"/workflows/{submitted.workflow_id}/tasks/nope/log/").json()["code"] == "task_not_found"
    bad = client.get(f"{url}?since=yesterday")
    assert bad.status_code == 400 and bad.json()["field"] == "since" and bad.json()["value"] == "yesterday"
    assert client.get(f"{url}?tail=0").json()["reason"] == "must be a whole number from 1 to 5000"
