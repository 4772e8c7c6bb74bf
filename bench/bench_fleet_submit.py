"""Workflow submission over HTTP with a year of history (issue #36): bench_workflows' load against the database
`make fleet` built (FLEET_DATABASE, default pool_portal_fleet: 1,000,000 workflows, 3M tasks, 14M events, 50,000
nodes, 500 projects), next to the same load on bench_workflows' empty throwaway database, in the same run.

    DEBUG=true DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/run.py fleet_submit

Who submits what: a fleet researcher with one project (so no project needs naming), to the pool with the most
workflows, on its default platform (a GPU platform whose node pool quotas manage: the workflow is stored QUEUED
and an admission pass is enqueued, where the empty database's is admitted at once and its pod creation
enqueued). The workflows carry names the history already uses (`bench.fleet_rows.NAMES`: thousands of each), so
the per-name numbering and whatever reads a name, a user or a pool meets a year of rows. The gunicorn server,
the raw-socket clients, the rounds and the figures are bench_workflows' (`http_rows`); then the same submission
in-process with its query count, its slowest query and its profile (stderr).

Nothing reaches a cluster: submission only stores and enqueues. The Celery messages (pod creation, admission
passes) go to `BENCH_BROKER_URL` (default redis://127.0.0.1:6379/12), which no worker reads and which is
emptied afterwards; in-process, nothing is enqueued. The fleet's backends may point at simulated clusters that
are not running.

The fleet stays as built: `FleetSubmitter` notes the highest workflow id and the name counters first, and on
the way out (also after a failure) deletes every workflow of its researcher above that id, with their task
events, tasks, node-pool parts and notifications, and any usage rows naming them (there are none unless a
worker ran them); puts the name counters back (or deletes a counter it created); and deletes its token and
the token's audit events; then VACUUMs those tables (a few seconds: their dead rows would otherwise wait
for autovacuum, which a million-row table reaches only after 200,000). Sequences are not rewound (the next ids
are higher, nothing else changes).
Without the fleet database, or without Redis, the rows say so and measure nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from bench import bench_workflows as load
from bench.bench_fleet_reads import _use_fleet_database
from bench.fleet_rows import NAMES
from bench.harness import Row

# The empty database's rows: "before" the fleet's (default), "after" them (to see what the order does on a shared
# machine), or "0": the fleet's rows only.
BASELINE = os.environ.get("FLEET_SUBMIT_BASELINE", "before")
TOKEN_NAME = "bench-fleet-submit"
TOUCHED = [
    "workflows_workflow",
    "workflows_workflowpart",
    "workflows_task",
    "workflows_taskevent",
    "workflows_workflowname",
]
FLEET_NAMES = {1: NAMES[0], 8: NAMES[1]}  # workflow names with a year of history each


def run() -> list[Row]:
    if not load._redis_answers(load.BROKER):
        return [Row("fleet: workflow submissions over HTTP", 0.0, 0.0, 0, "", f"skipped: no Redis at {load.BROKER}")]
    if _use_fleet_database() is None:
        return [Row("fleet: no fleet database (run `make fleet`)", 0.0, 0.0, 0)]
    empty = ", empty database"
    rows = load.empty_database_rows(label=empty) if BASELINE == "before" else []
    label = f", {_workflows():,} workflows in history"
    with FleetSubmitter() as fleet:
        print(f"bench_fleet_submit: {fleet.username} submits to {fleet.pool} ({fleet.platform})", file=sys.stderr)
        rows += load.http_rows(fleet.token, fleet.pool, FLEET_NAMES, label=label)
        rows += load.in_process(fleet.pool, fleet.username, FLEET_NAMES, label=label)
    print(f"bench_fleet_submit: removed {fleet.removed}", file=sys.stderr)
    load._purge()
    if BASELINE == "after":
        rows += load.empty_database_rows(label=empty)
    return rows


def _workflows() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workflows_workflow")
        return cursor.fetchone()[0]


@dataclass
class FleetSubmitter:
    """The submitter and its pool, chosen on the current database (a fleet), and its token; on exit, everything
    it submitted meanwhile removed (module docstring). `names`: the workflow names it may submit."""

    names: tuple[str, ...] = tuple(FLEET_NAMES.values())
    username: str = ""
    pool: str = ""
    platform: str = ""
    token: str = ""
    removed: dict[str, int] = field(default_factory=dict)
    _user: object = None
    _mark: int = 0
    _counters: dict[str, int] = field(default_factory=dict)

    def __enter__(self) -> FleetSubmitter:
        from django.db.models import Max

        from access.services import tokens
        from workflows.models import Workflow, WorkflowName

        self._user = _researcher()
        self.username = self._user.get_username()
        pool = _busiest_pool()
        self.pool, self.platform = pool.name, pool.default_platform
        self._mark = Workflow.objects.aggregate(last=Max("id"))["last"] or 0
        self._counters = dict(WorkflowName.objects.filter(name__in=self.names).values_list("name", "last_number"))
        self.token = tokens.create(self._user, TOKEN_NAME).secret
        return self

    def __exit__(self, *exc) -> None:
        self.removed = self.clean_up()

    def clean_up(self) -> dict[str, int]:
        """Remove what this submitter left (module docstring); returns the rows deleted, by kind."""
        from django.db import connection, transaction

        from access.models import APIToken, AuditEvent
        from usage.models import TaskAttempt, WorkflowRecord
        from workflows.models import Task, TaskEvent, Workflow, WorkflowName

        mine = Workflow.objects.filter(pk__gt=self._mark, submitted_by=self._user)
        removed = {"workflows": 0, "tasks": 0, "events": 0}
        while ids := list(mine.order_by("pk").values_list("pk", flat=True)[:500]):
            with transaction.atomic():
                names = list(Workflow.objects.filter(pk__in=ids).values_list("workflow_id", flat=True))
                task_ids = list(Task.objects.filter(workflow_id__in=ids).values_list("pk", flat=True))
                TaskAttempt.objects.filter(task_pk__in=task_ids).delete()
                WorkflowRecord.objects.filter(workflow_id__in=names).delete()
                removed["events"] += TaskEvent.objects.filter(task_id__in=task_ids).delete()[0]
                removed["tasks"] += len(task_ids)
                removed["workflows"] += len(ids)
                Workflow.objects.filter(pk__in=ids).delete()  # its tasks, parts and notifications with it
        with transaction.atomic():
            for name in self.names:
                if name in self._counters:
                    WorkflowName.objects.filter(name=name).update(last_number=self._counters[name])
                else:
                    WorkflowName.objects.filter(name=name).delete()
            target = f"user/{self.username}"
            APIToken.objects.filter(user=self._user, name=TOKEN_NAME).delete()
            AuditEvent.objects.filter(action="token.create", target=target, detail__token=TOKEN_NAME).delete()
        with connection.cursor() as cursor:  # their dead rows gone too: the next run meets the fleet as built
            cursor.execute(f"VACUUM {', '.join(TOUCHED)}")
        return removed


def _researcher():
    """The first fleet researcher (`userNNNNN`) who belongs to exactly one project."""
    from django.contrib.auth import get_user_model

    from teams.models import Project

    for user in get_user_model().objects.filter(username__startswith="user").order_by("pk")[:50]:
        if Project.objects.filter(role__group__user=user).count() == 1:
            return user
    raise RuntimeError("no fleet researcher with exactly one project (is this a `make fleet` database?)")


def _busiest_pool():
    from django.db.models import Count

    from pools.models import Pool

    return Pool.objects.annotate(n=Count("workflows")).order_by("-n", "name").first()
