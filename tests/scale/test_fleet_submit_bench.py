"""bench/bench_fleet_submit.py's set-up and clean-up on a tiny fleet (nothing timed: benchmarks never run as
tests): its researcher may submit to its pool with its token, and leaving puts the fleet back as it was."""

from __future__ import annotations

import pytest

from access.models import APIToken, AuditEvent
from access.services import tokens
from bench.bench_fleet_submit import FLEET_NAMES, FleetSubmitter
from bench.bench_workflows import spec
from bench.fleet import generate
from usage.models import TaskAttempt, WorkflowRecord
from workflows.models import Task, TaskEvent, Workflow, WorkflowName, WorkflowPart
from workflows.services import SubmitRequest, submit

pytestmark = pytest.mark.django_db(transaction=True)


def _fleet_state() -> dict:
    models = (Workflow, Task, TaskEvent, WorkflowPart, APIToken, AuditEvent, TaskAttempt, WorkflowRecord)
    return {
        **{model.__name__: model.objects.count() for model in models},
        "names": dict(WorkflowName.objects.values_list("name", "last_number")),
    }


def test_the_bench_submits_as_a_fleet_researcher_and_leaves_the_fleet_as_it_found_it(monkeypatch):
    from quotas import tasks as quota_jobs
    from workflows import tasks as jobs

    generate(0.0004, log=lambda *_: None)  # 400 workflows, 2 backends of 10 nodes
    enqueued = []
    monkeypatch.setattr(jobs.create_pods, "delay", lambda *args: enqueued.append(("pods", args)))
    monkeypatch.setattr(quota_jobs.admission_pass, "delay", lambda *args: enqueued.append(("admission", args)))
    before = _fleet_state()

    with FleetSubmitter(names=(*FLEET_NAMES.values(), "bench-never-seen")) as fleet:
        assert tokens.verify(fleet.token).user.get_username() == fleet.username
        assert fleet.platform
        user = tokens.verify(fleet.token).user
        submitted = [
            submit(SubmitRequest(pool=fleet.pool, spec=spec(name, tasks), who=user))
            for tasks, name in [*FLEET_NAMES.items(), (1, FLEET_NAMES[1]), (1, "bench-never-seen")]
        ]
        assert {r.status for r in submitted} <= {"QUEUED", "PENDING"}
        name, last = FLEET_NAMES[1], before["names"].get(FLEET_NAMES[1], 0)
        assert [r.workflow_id for r in submitted[::2]] == [f"{name}-{last + 1}", f"{name}-{last + 2}"]
        assert Workflow.objects.count() == before["Workflow"] + 4
        assert Task.objects.count() == before["Task"] + 1 + 8 + 1 + 1
    assert len(enqueued) == 4  # one message a workflow: nothing but enqueueing reaches a cluster

    assert fleet.removed == {"workflows": 4, "tasks": 11, "events": 11}
    assert _fleet_state() == before
