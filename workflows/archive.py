"""Retention of finished workflows (docs/scale.md#retention): archived to JSON lines, then removed.

A workflow that finished more than `WORKFLOW_ARCHIVE_DAYS` ago is written, with its tasks and their events,
its node-pool parts and whatever else refers to it (a notification row, say), as one JSON line of a file under
`WORKFLOW_ARCHIVE_DIR`, then deleted with all of that. The usage record is not touched: it names workflows and
tasks by name and id, never by foreign key, so its raw attempts, workflow records, rollups and totals stay, each
under its own retention (usage.services.retention).

A batch goes through three names, so a crash at any point loses nothing and duplicates nothing:

1. `workflows-<first id>-<last id>.jsonl.partial` while it is written (a crash here leaves the rows in place;
   the next run throws the partial file away and writes the batch again);
2. renamed `….jsonl.pending` once complete and flushed to disk: from here the file is the record, and the
   rows it holds are deleted (by id, and only while still finished before the cutoff);
3. renamed `….jsonl` after that deletion committed. A run first finishes every `.pending` file it finds
   (deletes what is left of its rows; none if the crash came after the commit), so a rerun is idempotent.

Runs never overlap (`workflows.reconcile.run_locked`). Each run archives at most `WORKFLOW_ARCHIVE_MAX_PER_RUN`
workflows in batches of `WORKFLOW_ARCHIVE_BATCH`, oldest id first.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import ForeignKey
from django.utils import timezone

from workflows.models import FINISHED_WORKFLOW, Task, TaskEvent, Workflow

log = logging.getLogger(__name__)

PARTIAL, PENDING, DONE = ".jsonl.partial", ".jsonl.pending", ".jsonl"


def directory() -> Path:
    path = Path(settings.WORKFLOW_ARCHIVE_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(days=settings.WORKFLOW_ARCHIVE_DAYS)


def archivable(now: datetime | None = None):
    """The workflows the job archives: finished, and finished before the cutoff."""
    return Workflow.objects.filter(status__in=sorted(FINISHED_WORKFLOW), finished_at__lt=cutoff(now))


def archive(now: datetime | None = None) -> dict:
    """One run: finish pending batches, then archive old finished workflows. Returns what it did."""
    now = now or timezone.now()
    folder = directory()
    for partial in sorted(folder.glob(f"*{PARTIAL}")):
        partial.unlink()  # a batch whose writing was cut short: its rows are all still there
    recovered = sum(_finish(path, now) for path in sorted(folder.glob(f"*{PENDING}")))
    archived, files = 0, []
    limit = settings.WORKFLOW_ARCHIVE_MAX_PER_RUN
    while archived < limit:
        ids = list(
            archivable(now)
            .order_by("id")
            .values_list("id", flat=True)[: min(settings.WORKFLOW_ARCHIVE_BATCH, limit - archived)]
        )
        if not ids:
            break
        pending = _export(folder, ids)
        archived += _finish(pending, now)
        files.append(pending.name.removesuffix(PENDING) + DONE)
    return {"archived": archived, "recovered": recovered, "files": files, "cutoff": cutoff(now).isoformat()}


def _export(folder: Path, ids: list[int]) -> Path:
    """Write the workflows `ids` as JSON lines; returns the `.pending` file (complete and on disk)."""
    stem = f"workflows-{ids[0]:012d}-{ids[-1]:012d}"
    partial, pending = folder / f"{stem}{PARTIAL}", folder / f"{stem}{PENDING}"
    with partial.open("w", encoding="utf-8") as out:
        for line in lines(ids):
            out.write(line)
            out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, pending)
    _sync_directory(folder)
    return pending


def lines(ids: list[int]):
    """One JSON document per workflow: its row, its tasks (each with its events), and the rows of every other
    table that refers to it (parts, notifications, …: whatever the deletion would take along)."""
    workflows = {row["id"]: row for row in Workflow.objects.filter(pk__in=ids).order_by("id").values()}
    tasks: dict[int, list[dict]] = {pk: [] for pk in workflows}
    by_task: dict[int, dict] = {}
    for task in Task.objects.filter(workflow_id__in=ids).order_by("id").values():
        task["events"] = []
        tasks[task["workflow_id"]].append(task)
        by_task[task["id"]] = task
    for event in TaskEvent.objects.filter(task__workflow_id__in=ids).order_by("at", "id").values():
        by_task[event["task_id"]]["events"].append(event)
    others: dict[str, dict[int, list[dict]]] = {}
    for relation in Workflow._meta.related_objects:
        if relation.related_model is Task or not isinstance(relation.remote_field, ForeignKey):
            continue
        rows: dict[int, list[dict]] = {pk: [] for pk in workflows}
        column = relation.field.attname
        for row in relation.related_model._default_manager.filter(**{f"{column}__in": ids}).order_by("pk").values():
            rows[row[column]].append(row)
        others[relation.related_model._meta.label_lower] = rows
    for pk, row in workflows.items():
        document = {"workflow": row, "tasks": tasks[pk], **{label: rows[pk] for label, rows in others.items()}}
        yield json.dumps(document, cls=DjangoJSONEncoder, separators=(",", ":"), sort_keys=True)


def _finish(pending: Path, now: datetime) -> int:
    """Delete the rows a complete batch file holds (those still archivable), then mark the file done."""
    ids = []
    with pending.open(encoding="utf-8") as lines_in:
        for line in lines_in:
            if line.strip():
                ids.append(json.loads(line)["workflow"]["id"])
    deleted = 0
    for start in range(0, len(ids), 500):
        with transaction.atomic():
            chunk = ids[start : start + 500]
            deleted += archivable(now).filter(pk__in=chunk).count()
            # the events first, in one statement each (the collector would load every task and event row)
            TaskEvent.objects.filter(task__workflow_id__in=chunk, task__workflow__in=archivable(now)).delete()
            archivable(now).filter(pk__in=chunk).delete()
    os.replace(pending, pending.with_name(pending.name.removesuffix(PENDING) + DONE))
    _sync_directory(pending.parent)
    log.info("archived %d workflows into %s", deleted, pending.name.removesuffix(PENDING) + DONE)
    return deleted


def _sync_directory(folder: Path) -> None:
    """A rename is durable once its directory is flushed (POSIX); best effort elsewhere."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
