"""The read side at fleet scale (issue #36, docs/scale.md): researcher and admin pages, in-process through
Django's test Client, and `quota show`, on the database `make fleet` built (FLEET_DATABASE, default
pool_portal_fleet). Without that database the rows say so and measure nothing.

The capacity summary the catalog and the dashboard read is summed before each page, as the periodic job keeps it
(pools.services.capacity_summary); the job's own time is the first row. Who and what is read: a researcher with a
typical history (the median number of workflows of a user, about 500 in a year), the workflow of theirs with the
most tasks, the pool with the most workflows, the admin's workflow list (first page, with a status and pool
filter, and page 1,000), the admin home's dashboard, and `quota show` of a node pool whose quotas name all 500
projects.
"""

from __future__ import annotations

import io
import os

from bench.harness import Row, measure

RUNS = int(os.environ.get("FLEET_BENCH_RUNS", "40"))


def _use_fleet_database() -> str | None:
    """Point Django's default connection at the fleet database; None when it is missing."""
    from bench.django_env import setup

    setup()
    import psycopg
    from django.db import connection, connections

    name = os.environ.get("FLEET_DATABASE", "pool_portal_fleet")
    settings = connection.settings_dict
    try:
        with psycopg.connect(
            host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432, user=settings["USER"], dbname=name
        ) as probe:
            built = probe.execute("SELECT to_regclass('workflows_workflow') IS NOT NULL").fetchone()[0]
    except psycopg.OperationalError:
        return None
    if not built:
        return None
    connections.close_all()
    settings["NAME"] = name
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a fleet built by an older tree gains this tree's tables
    return name


def run() -> list[Row]:
    name = _use_fleet_database()
    if name is None:
        return [Row("fleet: no fleet database (run `make fleet`)", 0.0, 0.0, 0)]
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Count
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.fleet_config import admin_user
    from pools.models import Pool
    from pools.services import capacity_summary
    from quotas.models import NodePool
    from workflows.models import Workflow

    # The test Client without setup_test_environment: that instruments every template render (response.context),
    # which a big page pays for and production never does; only the Client's host name is allowed here.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    with connection.cursor() as cursor:  # a researcher with the median number of workflows
        cursor.execute(
            "SELECT submitted_by_id, n FROM (SELECT submitted_by_id, count(*) n FROM workflows_workflow "
            "GROUP BY submitted_by_id) s ORDER BY n LIMIT 1 OFFSET (SELECT count(DISTINCT submitted_by_id) / 2 "
            "FROM workflows_workflow)"
        )
        user_pk, mine = cursor.fetchone()
        cursor.execute("SELECT pool_id FROM workflows_workflow GROUP BY pool_id ORDER BY count(*) DESC LIMIT 1")
        pool_pk = cursor.fetchone()[0]
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'workflows_workflow'")
        total = cursor.fetchone()[0]
    researcher = get_user_model().objects.get(pk=user_pk)
    workflow = Workflow.objects.filter(submitted_by=researcher).annotate(n=Count("tasks")).order_by("-n", "-id").first()
    pool = Pool.objects.get(pk=pool_pk)
    node_pool = NodePool.objects.exclude(selector_kind="default").annotate(n=Count("quotas")).order_by("-n").first()
    users = Client()
    users.force_login(researcher)
    admins = Client()
    admins.force_login(admin_user())

    def page(client, url):
        def get():
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return response

        return get

    def queries(fn) -> int:
        with CaptureQueriesContext(connection) as captured:
            fn()
        return len(captured.captured_queries)

    admin_list = "/admin/workflows/workflow/"
    cases = [
        ("pool catalog", page(users, "/"), "≤ 300 ms", ""),
        (f"pool page ({pool.name})", page(users, f"/pools/{pool.name}/"), "≤ 300 ms", ""),
        (f"My workflows, first page ({mine} workflows)", page(users, "/workflows/"), "≤ 200 ms", ""),
        (
            "My workflows, status filter",
            page(users, "/workflows/?status=COMPLETED"),
            "≤ 200 ms",
            "",
        ),
        (
            f"workflow page ({workflow.workflow_id}, {workflow.n} tasks)",
            page(users, f"/workflows/{workflow.workflow_id}/"),
            "≤ 150 ms",
            "",
        ),
        ("admin workflow list, first page", page(admins, admin_list), "≤ 200 ms", ""),
        (
            "admin workflow list, status + pool filter",
            page(admins, f"{admin_list}?status__exact=COMPLETED&pool__id__exact={pool.pk}"),
            "≤ 200 ms",
            "",
        ),
        ("admin workflow list, page 1,000", page(admins, f"{admin_list}?p=1000"), "≤ 200 ms", ""),
        ("admin dashboard", page(admins, "/admin/"), "≤ 300 ms", ""),
    ]

    def quota_show():
        call_command("quota", "show", node_pool.name, stdout=io.StringIO())

    # the capacity summary as the beat keeps it (every CAPACITY_SUMMARY_SECONDS): summed before each page, so none
    # of the pages' runs sums it for the request; its own cost is a row of its own
    rows = [
        measure("fleet: capacity summary job (every pool and platform)", capacity_summary.refresh, runs=5, warmup=1)
    ]
    for label, fn, target, note in cases:
        capacity_summary.refresh()
        count = queries(fn)
        rows.append(measure(f"fleet: {label}", fn, runs=RUNS, warmup=3, target=target, note=f"{count} queries {note}"))
    count = queries(quota_show)
    rows.append(
        measure(
            f"fleet: quota show {node_pool.name} ({node_pool.n // 3} teams' rows)",
            quota_show,
            runs=RUNS,
            warmup=3,
            target="≤ 300 ms",
            note=f"{count} queries",
        )
    )
    for row in rows:
        row.note = f"{row.note}; {total:,} workflows".strip()
    return rows
