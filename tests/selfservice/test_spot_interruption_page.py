"""The workflow page after spot interruptions: each one named with its node, time and attempt, what followed
(rescheduled as attempt N, or the task failed), and a task that ended by one says so. The rows are those the
lifecycle writes (`workflows.lifecycle.interruption`; driven against the cluster in
tests/workflows/test_spot_interruption.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.selfservice.conftest import TRAINING
from tests.selfservice.test_pages import SPEC, text
from workflows.models import Task, TaskEvent, TaskStatus, Workflow, WorkflowStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(demo_world):
    demo_world.client(demo_world.researcher).post(f"/pools/{TRAINING}/submit/", {"spec": SPEC, "priority": "NORMAL"})
    return Workflow.objects.get()


def _interrupted(workflow, *, rescheduled: bool):
    task = workflow.tasks.get()
    at = task.created_at + timedelta(seconds=30)
    said = f"spot interruption on node gpu-spot-ab12c at {at:%Y-%m-%d %H:%M:%S} UTC"
    record = {
        "node": "gpu-spot-ab12c",
        "at": at.isoformat(),
        "attempt": 1,
        "pod": task.pod_name,
        "action": "RESCHEDULE" if rescheduled else "FAIL",
        "next_attempt": 2 if rescheduled else None,
    }
    TaskEvent.objects.create(task=task, kind="SPOT_INTERRUPTION", at=at, message=f"{said}: attempt 1 stopped")
    if rescheduled:
        TaskEvent.objects.create(task=task, kind="RESCHEDULED", at=at, message=f"{said}; rescheduled as attempt 2")
        Task.objects.filter(pk=task.pk).update(status=TaskStatus.PENDING, retry_id=1, interruptions=[record])
        Workflow.objects.filter(pk=workflow.pk).update(status=WorkflowStatus.PENDING)
        return at
    Task.objects.filter(pk=task.pk).update(
        status=TaskStatus.FAILED_BACKEND_ERROR,
        node="gpu-spot-ab12c",
        exit_code=3001,
        exit_reason="spot interruption",
        exit_message=f"{said}: Terminated",
        finished_at=at,
        error=f"{said} (exit code 3001, the container's 143; the exit status: FAIL)",
        interruptions=[record],
    )
    Workflow.objects.filter(pk=workflow.pk).update(
        status=WorkflowStatus.FAILED_BACKEND_ERROR, finished_at=at, started_at=task.created_at
    )
    return at


def test_a_rescheduled_interruption_says_where_when_and_which_attempt_follows(demo_world, submitted):
    at = _interrupted(submitted, rescheduled=True)
    page = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/")
    words = text(page)
    assert "Spot interruption on node gpu-spot-ab12c at" in words
    assert "(attempt 1); rescheduled as attempt 2" in words
    assert "Spot interruption spot interruption on node gpu-spot-ab12c" in words  # the timeline's step
    html = page.content.decode()
    assert f'<time datetime="{at.isoformat()}" data-local>' in html.split('id="interruption-train-1"')[1]
    assert 'class="step bad" data-kind="SPOT_INTERRUPTION"' in html


def test_a_task_ended_by_an_interruption_says_so(demo_world, submitted):
    _interrupted(submitted, rescheduled=False)
    page = demo_world.client(demo_world.researcher).get(f"/workflows/{submitted.workflow_id}/")
    words = text(page)
    ending = page.content.decode().split('id="ending-train"')[1]
    assert ending.startswith("><b>Spot interruption on node gpu-spot-ab12c</b> at <time")
    assert "(attempt 1); the task failed (no RESCHEDULE exit action, or no retries left)" in words
    assert "3001 spot interruption" in words  # the exit column, with its reason
    assert "the exit status: FAIL" in words
