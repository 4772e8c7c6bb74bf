"""The usage record from the simulated cluster's pod times (docs/usage.md, "The record"): one row per attempt,
opened when the container starts and closed once when it ends, across retries, spot interruptions, preemption
and cancellation; nothing counted twice."""

from __future__ import annotations

from datetime import timedelta

import pytest

from clusters.inventory import sync_backend
from tests.queries import assert_constant_queries
from tests.usage.factories import attempt_row
from tests.workflows.conftest import settle_until, spec
from tests.workflows.test_spot_interruption import interrupt, running
from usage.models import Outcome, TaskAttempt, WorkflowRecord
from usage.services import record
from workflows.lifecycle.admit_hold_preempt import preempt
from workflows.lifecycle.cancel import cancel
from workflows.lifecycle.create import create_pods
from workflows.models import Task, WorkflowStatus

pytestmark = pytest.mark.django_db(transaction=False)


def attempts(workflow) -> list[TaskAttempt]:
    return list(TaskAttempt.objects.filter(workflow_id=workflow.workflow_id).order_by("task", "attempt"))


def test_a_completed_task_is_one_attempt_with_the_clusters_times_and_its_nodes_price(backend, submitted, run_on_commit):
    sync_backend(backend.pk)  # the inventory: the node's instance type prices the attempt
    workflow = submitted()
    run_on_commit(create_pods, workflow.pk)
    settle_until(backend, workflow, {WorkflowStatus.COMPLETED}, run_on_commit)
    task = workflow.tasks.get()
    [row] = attempts(workflow)
    assert (row.attempt, row.outcome, row.node, row.pod) == (0, Outcome.COMPLETED, task.node, task.pod_name)
    assert row.started_at == task.started_at.replace(microsecond=0)
    assert row.ended_at == task.finished_at.replace(microsecond=0) >= row.started_at
    workflow.refresh_from_db()
    assert (row.pool, row.platform, row.backend, row.cpu_millis, row.memory_bytes) == (
        "batch",
        "cpu",
        "sim",
        workflow.requests["cpu"],
        workflow.requests["memory"],
    )
    assert row.instance_type and row.capacity_type == "on-demand"
    assert row.hourly_cost_micros > 0 and "catalog" in row.price_source
    [kept] = WorkflowRecord.objects.filter(workflow_id=workflow.workflow_id)
    assert (kept.status, kept.running_at) == (WorkflowStatus.COMPLETED, row.started_at)
    assert kept.submitted_at <= kept.admitted_at <= kept.finished_at


def test_each_retry_is_its_own_attempt_and_none_overlaps(backend, submitted, run_on_commit):
    workflow = submitted(exit_actions={"RESCHEDULE": "3"}, platform="exit3")
    run_on_commit(create_pods, workflow.pk)
    settle_until(backend, workflow, {WorkflowStatus.FAILED}, run_on_commit, timeout=30)
    rows = attempts(workflow)
    assert [(r.attempt, r.outcome) for r in rows] == [(0, "failed"), (1, "failed"), (2, "failed")]
    for before, after in zip(rows, rows[1:], strict=False):
        assert before.ended_at <= after.started_at
    assert len({r.pod for r in rows}) == 3


def test_a_spot_interruption_ends_the_attempt_and_the_next_one_completes(
    spot_pool, backend, kube, submitted, run_on_commit
):
    workflow = submitted(spec("spot", platform="spotty", exit_actions={"RESCHEDULE": "143"}))
    run_on_commit(create_pods, workflow.pk)
    first = running(backend, workflow, run_on_commit)
    interrupt(kube, first.node)
    settle_until(backend, workflow, {WorkflowStatus.COMPLETED}, run_on_commit, timeout=20)
    rows = attempts(workflow)
    assert [(r.attempt, r.outcome) for r in rows] == [(0, Outcome.SPOT_INTERRUPTION), (1, Outcome.COMPLETED)]
    assert rows[0].node == first.node != rows[1].node


def test_preemption_and_cancel_end_the_running_attempt(backend, submitted, run_on_commit):
    preempted, cancelled = submitted(platform="forever"), submitted(platform="forever")
    for workflow in (preempted, cancelled):
        run_on_commit(create_pods, workflow.pk)
        settle_until(backend, workflow, {WorkflowStatus.RUNNING}, run_on_commit)
    run_on_commit(preempt, preempted.pk, {"text": "reclaimed by train"})
    run_on_commit(cancel, cancelled.workflow_id, force=True)
    assert [r.outcome for r in attempts(preempted)] == [Outcome.PREEMPTED]
    assert [r.outcome for r in attempts(cancelled)] == [Outcome.CANCELLED]
    assert WorkflowRecord.objects.get(workflow_id=cancelled.workflow_id).status == WorkflowStatus.CANCELLED


def test_events_heard_twice_count_once(backend, submitted, run_on_commit):
    workflow = submitted()
    run_on_commit(create_pods, workflow.pk)
    settle_until(backend, workflow, {WorkflowStatus.COMPLETED}, run_on_commit)
    task = workflow.tasks.get()
    [before] = attempts(workflow)
    later = task.finished_at + timedelta(hours=1)
    record.on_events([(task.pk, "RUNNING", task.started_at), (task.pk, "EXITED", later)])
    [after] = attempts(workflow)
    assert (after.pk, after.ended_at, after.outcome) == (before.pk, before.ended_at, before.outcome)


def test_repair_closes_an_attempt_whose_task_moved_on(backend, submitted):
    workflow = submitted()
    task = workflow.tasks.get()
    row = attempt_row(task_pk=task.pk, attempt=0, workflow_id=workflow.workflow_id, ended_at=None)
    Task.objects.filter(pk=task.pk).update(retry_id=1)
    assert record.repair_open() == 1
    row.refresh_from_db()
    assert row.outcome == Outcome.FAILED and row.ended_at is not None


def test_closing_attempts_takes_constant_queries_and_keeps_each_ones_outcome_and_time():
    """One UPDATE closes them all (a CASE per column), each with its own event's outcome and time, never before
    its start; an attempt already closed keeps its first end."""
    start = attempt_row(ended_at=None).started_at
    rows: list[TaskAttempt] = []

    def close():
        ends = {
            row.task_pk: ("PREEMPTED" if i % 2 else "CANCELLED", start + timedelta(minutes=i))
            for i, row in enumerate(rows)
        }
        record.close_attempts(ends)

    def grow(count):
        rows.extend(attempt_row(ended_at=None) for _ in range(count))

    grow(2)
    closed_first = rows[0]
    close()
    TaskAttempt.objects.filter(pk__in=[r.pk for r in rows[1:]]).update(ended_at=None, outcome=Outcome.RUNNING)
    assert_constant_queries(close, lambda: grow(8))
    found = {row.pk: row for row in TaskAttempt.objects.filter(pk__in=[r.pk for r in rows])}
    assert found[closed_first.pk].ended_at == start and found[closed_first.pk].outcome == Outcome.CANCELLED
    for i, row in enumerate(rows[1:], start=1):
        assert found[row.pk].outcome == (Outcome.PREEMPTED if i % 2 else Outcome.CANCELLED)
        assert found[row.pk].ended_at == start + timedelta(minutes=i)
    early = attempt_row(ended_at=None, started_at=start + timedelta(hours=2))
    record.close_attempts({early.task_pk: ("CANCELLED", start)})
    early.refresh_from_db()
    assert early.ended_at == early.started_at  # an end before the start is the start


def test_repair_takes_constant_queries(backend, submitted):
    workflow = submitted()
    task = workflow.tasks.get()
    attempt_row(task_pk=task.pk, attempt=0, workflow_id=workflow.workflow_id, ended_at=None)
    Task.objects.filter(pk=task.pk).update(retry_id=1)

    def orphans():  # attempts of tasks deleted since
        for _ in range(6):
            attempt_row(ended_at=None)

    assert assert_constant_queries(record.repair_open, orphans) == 3
