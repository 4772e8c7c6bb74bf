"""Workflows stored before tasks were charged one by one (issue #30 point 8) are carried by
`workflows.0010_carry_workflow_parts`: each charged workflow becomes one part in its node pool with its whole
requests, admitted when it was (not while QUEUED), and its tasks are charged to that node pool; a workflow
charged nowhere gets no part.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from tests.migrations.migrating import leaves, migrate

BEFORE = ("workflows", "0008_task_interruptions")

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_parts():
    latest = leaves()
    try:
        yield migrate([node for node in latest if node[0] != "workflows"] + [BEFORE]), latest
    finally:
        migrate(latest)


def test_charged_workflows_become_one_part_each_with_their_tasks_charged(before_parts):
    apps, latest = before_parts
    Backend, Pool = apps.get_model("clusters", "Backend"), apps.get_model("pools", "Pool")
    User, Workflow, Task = (
        apps.get_model("auth", "User"),
        apps.get_model("workflows", "Workflow"),
        apps.get_model("workflows", "Task"),
    )
    pool = Pool.objects.create(name="batch", backend=Backend.objects.create(name="sim"))
    user = User.objects.create(username="alice")
    admitted = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    rows = {
        "running": ("RUNNING", "h100", admitted, True),
        "queued": ("QUEUED", "h100", None, False),
        "done": ("COMPLETED", "sim-default", admitted, False),
        "nowhere": ("PENDING", "", None, False),
    }
    for name, (status, node_pool, at, preemptible) in rows.items():
        workflow = Workflow.objects.create(
            workflow_id=f"{name}-1", name=name, pool=pool, submitted_by=user, status=status, node_pool=node_pool,
            requests={"gpu": 4, "cpu": 2000, "memory": 0}, admitted_at=at, preemptible=preemptible,
        )  # fmt: skip
        for task in ("a", "b"):
            Task.objects.create(workflow=workflow, name=task, group_name=task, platform="p", pod_name=f"{name}-{task}")

    apps = migrate(latest)
    Part, Task = apps.get_model("workflows", "WorkflowPart"), apps.get_model("workflows", "Task")
    parts = {p.workflow.workflow_id: p for p in Part.objects.select_related("workflow")}
    assert set(parts) == {"running-1", "queued-1", "done-1"}  # charged nowhere: no part
    running = parts["running-1"]
    assert (running.node_pool, running.requests["gpu"], running.tasks, running.preemptible) == (
        "h100",
        4,
        ["a", "b"],
        True,
    )
    assert running.admitted_at == admitted and parts["queued-1"].admitted_at is None
    charged = dict(Task.objects.values_list("pod_name", "node_pool"))
    assert charged == {
        "running-a": "h100", "running-b": "h100", "queued-a": "h100", "queued-b": "h100",
        "done-a": "sim-default", "done-b": "sim-default", "nowhere-a": "", "nowhere-b": "",
    }  # fmt: skip
