"""The admin's usage page and the REST report in a real browser at 1440 px and 390 px (docs/usage.md): a week of
GPU use by five projects in two node pools, hourly guarantees, waits and a queue. No script or resource errors,
nothing wider than the screen, the sidebar links to the page, the CSV links download. Screenshots:
var/screenshots/usage-*.png (printed)."""

from __future__ import annotations

import itertools
import random
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from access.services import roles
from tests.e2e.looks import SHOTS, collect_failures, shoot, sign_in_admin
from tests.factories import WorkflowFactory
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    backend,
    carved,
    kube_server,
    pools_config,
    synced,
    teams,
)
from tests.selfservice.conftest import PASSWORD
from tests.usage.factories import attempt_row
from usage.models import DeservedSample, WorkflowRecord
from usage.services.rollup import floor_hour, roll_up
from workflows.models import WorkflowStatus

PROJECTS = {  # project: (department, node pool, deserved GPUs, GPUs of a typical attempt)
    "vision": ("research", "h100", 12, 4),
    "speech": ("research", "h100", 8, 2),
    "language-models-pretraining": ("research", "h100", 8, 8),
    "infer": ("ops", "a100", 4, 1),
    "batch-eval": ("ops", "a100", 2, 2),
}


def usage_week(teams):  # noqa: F811
    """A week of attempts (rolled up, except the last day's), hourly deserved samples, waits and a live queue."""
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    chance = random.Random(32)
    now = timezone.now()
    first = floor_hour(now) - timedelta(days=7)
    numbers = itertools.count(1)
    for hour in range(7 * 24):
        at = first + timedelta(hours=hour)
        for project, (department, node_pool, deserved, gpus) in PROJECTS.items():
            DeservedSample.objects.create(
                hour=at, node_pool=node_pool, project=project, department=department, gpu_deserved=deserved
            )
            busy = 0.3 + 0.6 * (8 <= at.hour <= 20)
            for _ in range(chance.randint(0, 3)):
                if chance.random() < busy:
                    ended = at + timedelta(minutes=chance.randint(20, 180))
                    attempt_row(
                        project=project,
                        department=department,
                        node_pool=node_pool,
                        gpu=gpus,
                        started_at=at + timedelta(minutes=chance.randint(0, 50)),
                        ended_at=ended if ended < now else None,
                        hourly_cost_micros=gpus * 12_290_000 if node_pool == "h100" else gpus * 5_120_000,
                    )
        for _ in range(chance.randint(0, 4)):
            submitted = at + timedelta(minutes=chance.randint(0, 59))
            waited = timedelta(seconds=chance.expovariate(1 / (900 if 8 <= at.hour <= 20 else 120)))
            if submitted + waited < now:
                WorkflowRecord.objects.create(
                    workflow_id=f"done-{next(numbers)}",
                    pool="train",
                    priority="NORMAL",
                    status="COMPLETED",
                    submitted_at=submitted,
                    admitted_at=submitted + waited,
                    running_at=submitted + waited,
                    finished_at=min(now, submitted + waited + timedelta(minutes=30)),
                )
    roll_up(now=now - timedelta(days=1))
    for _ in range(3):
        WorkflowFactory(status=WorkflowStatus.QUEUED, node_pool="h100", project=teams["vision"])


@pytest.mark.django_db(transaction=True)
def test_the_usage_page_and_the_report_fit_a_desktop_and_a_phone(page, live_server, carved, teams):  # noqa: F811
    base = live_server.url
    usage_week(teams)
    failures = collect_failures(page)
    sign_in_admin(page, base, "root")
    print(f"screenshots in {SHOTS}")
    sidebar = page.locator('a[href="/admin/usage/usagerollup/"]')
    assert sidebar.count() >= 1  # the sidebar links to the page
    today = timezone.now().date()
    pages = [
        ("usage-page-7d", "/admin/usage/usagerollup/", "#chart-cost"),
        ("usage-page-24h", "/admin/usage/usagerollup/?range=24h", "#chart-cost"),
        (
            "usage-page-custom",
            f"/admin/usage/usagerollup/?range=custom&from={today - timedelta(days=20)}&to={today}",
            "#chart-cost",
        ),
        ("usage-report-api", "/api/usage/report?by=department,node-pool&format=api", "pre"),
    ]
    overflow = {name: shoot(page, f"{base}{path}", name, ready=ready) for name, path, ready in pages}
    assert {name: widths for name, widths in overflow.items() if any(widths.values())} == {}  # nothing too wide
    page.goto(f"{base}/admin/usage/usagerollup/")
    with page.expect_download() as download:
        page.click("#chart-cost a.use-csv")
    text = open(download.value.path()).read()  # noqa: PTH123, SIM115
    assert text.startswith("period,department,cost_usd,gpu_hours\n") and "research" in text
    assert failures == []
