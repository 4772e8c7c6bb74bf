"""Retention of finished workflows (workflows.archive, docs/scale.md#retention): old finished workflows go to
JSON lines and are removed with their tasks, events and parts; live and recent ones stay; the usage record
stays; a rerun changes nothing; a run that died between writing and deleting loses nothing on the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from tests.factories import TaskFactory, WorkflowFactory
from usage.models import TaskAttempt, UsageRollup, UsageTotal, WorkflowRecord
from workflows import archive
from workflows.models import Task, TaskEvent, Workflow, WorkflowPart
from workflows.tasks import archive_workflows

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(settings, tmp_path):
    settings.WORKFLOW_ARCHIVE_DIR = tmp_path / "archive"
    settings.WORKFLOW_ARCHIVE_DAYS = 30
    settings.WORKFLOW_ARCHIVE_BATCH = 2
    return settings.WORKFLOW_ARCHIVE_DIR


def _workflow(status: str, finished_days_ago: float | None, tasks: int = 2) -> Workflow:
    now = timezone.now()
    finished = now - timedelta(days=finished_days_ago) if finished_days_ago is not None else None
    workflow = WorkflowFactory(status=status, finished_at=finished, node_pool="np", requests={"gpu": tasks})
    Workflow.objects.filter(pk=workflow.pk).update(created_at=(finished or now) - timedelta(hours=1))
    for i in range(tasks):
        task = TaskFactory(workflow=workflow, name=f"t{i}", status="COMPLETED" if finished else "RUNNING")
        TaskEvent.objects.bulk_create(
            [TaskEvent(task=task, kind="SUBMITTED", message="submitted"), TaskEvent(task=task, kind="RUNNING")]
        )
    return workflow


def _records(workflow: Workflow) -> None:
    """The usage record of a workflow: raw attempt, workflow record, rollup, total (no foreign keys)."""
    now = timezone.now()
    task = workflow.tasks.first()
    TaskAttempt.objects.create(
        task_pk=task.pk,
        attempt=0,
        workflow_id=workflow.workflow_id,
        task=task.name,
        pool="p",
        platform="x",
        backend="b",
        started_at=now - timedelta(days=40),
        ended_at=now - timedelta(days=39),
        outcome="completed",
        rolled_up=True,
    )
    WorkflowRecord.objects.create(
        workflow_id=workflow.workflow_id, pool="p", priority="NORMAL", submitted_at=now, status="COMPLETED"
    )
    UsageRollup.objects.create(granularity="day", period_start=now - timedelta(days=39), gpu_seconds=3600)
    UsageTotal.objects.create(project="", node_pool="np", gpu_seconds=3600)


def _archived_lines(folder) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]


def test_archives_exactly_the_old_finished_workflows_and_keeps_the_rest(folder):
    old = [_workflow("COMPLETED", 40), _workflow("FAILED", 31, tasks=3), _workflow("CANCELLED", 365)]
    recent = _workflow("COMPLETED", 10)
    running = _workflow("RUNNING", None)  # created long ago, still running: never archived
    Workflow.objects.filter(pk=running.pk).update(created_at=timezone.now() - timedelta(days=400))
    queued_old = _workflow("QUEUED", None, tasks=1)
    _records(old[0])

    result = archive.archive()

    assert result["archived"] == 3 and result["recovered"] == 0
    assert set(Workflow.objects.values_list("pk", flat=True)) == {recent.pk, running.pk, queued_old.pk}
    assert not Task.objects.filter(workflow_id__in=[w.pk for w in old]).exists()
    assert not TaskEvent.objects.filter(task__workflow_id__in=[w.pk for w in old]).exists()
    assert not WorkflowPart.objects.filter(workflow_id__in=[w.pk for w in old]).exists()
    assert TaskEvent.objects.filter(task__workflow=running).count() == 4  # the live ones' events untouched
    # two files (batches of 2), each done; every line a whole workflow with its tasks, events and parts
    assert sorted(p.suffix for p in folder.iterdir()) == [".jsonl", ".jsonl"]
    lines = _archived_lines(folder)
    assert sorted(line["workflow"]["workflow_id"] for line in lines) == sorted(w.workflow_id for w in old)
    failed = next(line for line in lines if line["workflow"]["status"] == "FAILED")
    assert [task["name"] for task in failed["tasks"]] == ["t0", "t1", "t2"]
    assert [event["kind"] for event in failed["tasks"][0]["events"]] == ["SUBMITTED", "RUNNING"]
    assert failed["workflows.workflowpart"][0]["node_pool"] == "np"
    # the usage record is not the archive's: attempts, workflow records, rollups and totals stay
    assert TaskAttempt.objects.count() == 1 and WorkflowRecord.objects.count() == 1
    assert UsageRollup.objects.count() == 1 and UsageTotal.objects.count() == 1


def test_a_rerun_changes_nothing(folder):
    _workflow("COMPLETED", 40)
    _workflow("COMPLETED", 50)
    first = archive.archive()
    files = {p.name: p.read_bytes() for p in folder.iterdir()}

    again = archive.archive()

    assert first["archived"] == 2 and again == {**again, "archived": 0, "recovered": 0, "files": []}
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files


def test_a_run_that_died_after_writing_loses_nothing_and_duplicates_nothing(folder):
    """The job writes a batch's file (`.pending`) before deleting its rows; a process killed right there leaves
    the file and every row. The next run deletes those rows once, and writes no second copy of them."""
    old = [_workflow("COMPLETED", 40), _workflow("COMPLETED", 41)]
    later = _workflow("COMPLETED", 45)  # becomes part of a batch only in the next run
    pending = archive._export(archive.directory(), [w.pk for w in old])  # the first run's last act before dying
    assert pending.name.endswith(".jsonl.pending")
    assert Workflow.objects.count() == 3

    result = archive.archive()

    assert result["recovered"] == 2 and result["archived"] == 1
    assert not Workflow.objects.exists() and not Task.objects.exists() and not TaskEvent.objects.exists()
    ids = sorted(line["workflow"]["id"] for line in _archived_lines(folder))
    assert ids == sorted([old[0].pk, old[1].pk, later.pk])  # each once
    assert not list(folder.glob("*.pending")) and not list(folder.glob("*.partial"))


def test_a_run_that_died_after_deleting_but_before_renaming_finishes_the_file(folder):
    old = _workflow("COMPLETED", 40)
    pending = archive._export(archive.directory(), [old.pk])
    Workflow.objects.filter(pk=old.pk).delete()  # the deletion committed, then the process died

    result = archive.archive()

    assert result["recovered"] == 0 and result["archived"] == 0
    assert [p.name for p in folder.iterdir()] == [pending.name.removesuffix(".pending")]
    assert [line["workflow"]["id"] for line in _archived_lines(folder)] == [old.pk]


def test_a_file_cut_short_while_written_is_written_again(folder):
    old = _workflow("COMPLETED", 40)
    folder.mkdir(parents=True)
    cut = folder / f"workflows-{old.pk:012d}-{old.pk:012d}.jsonl.partial"
    cut.write_text('{"workflow": {"id": ')  # a process killed mid-write

    assert archive.archive()["archived"] == 1
    assert [line["workflow"]["id"] for line in _archived_lines(folder)] == [old.pk]
    assert not cut.exists()


def test_the_beat_runs_it_and_zero_days_turns_it_off(folder, settings):
    assert settings.CELERY_BEAT_SCHEDULE["workflows-archive"]["task"] == "workflows.tasks.archive_workflows"
    old = _workflow("COMPLETED", 40)
    settings.WORKFLOW_ARCHIVE_DAYS = 0
    assert archive_workflows() == {"archived": 0, "off": True}
    assert Workflow.objects.filter(pk=old.pk).exists()
    settings.WORKFLOW_ARCHIVE_DAYS = 30
    assert archive_workflows()["archived"] == 1


@pytest.mark.parametrize("days", ["3", "4000", "-1"])
def test_an_age_out_of_bounds_is_refused_at_start(days):
    environment = {**os.environ, "WORKFLOW_ARCHIVE_DAYS": days, "DJANGO_SETTINGS_MODULE": "portal.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=environment,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        check=False,
    )
    assert done.returncode != 0
    assert f"WORKFLOW_ARCHIVE_DAYS={days}: expected 7 to 3650 days, or 0 (never)" in done.stderr
