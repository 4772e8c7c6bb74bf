"""Seeing usage in a real browser at 1440 px and 390 px: "your team's usage" on the pool page and in My
workflows, the admin home's key numbers with sparklines and its 24-hour chart, the fair-share page's sparklines;
nothing wider than the screen, no script or resource errors; the admin home refreshes itself in place (scroll
kept). Screenshots: var/screenshots/usage-*.png (printed)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from pools.models import Pool
from quotas.models import NodePool
from tests.e2e.looks import DESKTOP, SHOTS, collect_failures, sign_in_admin, walk
from tests.e2e.test_quota_pages import quota_world
from tests.e2e.test_submit_preview import sign_in
from tests.factories import WorkflowFactory
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    backend,
    carved,
    kube_server,
    pools_config,
    synced,
    teams,
)
from tests.usage.factories import attempt_row
from workflows.models import Workflow, WorkflowStatus

pytestmark = pytest.mark.heavy


def usage_world(teams):  # noqa: F811
    """quota_world's quotas and workflows, and a day and a half of usage: vision and speech in h100 (8 and
    12 GPUs running for hours), vision in a100 (2-GPU jobs every few hours), finished workflows of each kind."""
    quota_world(teams)
    now = timezone.now().replace(microsecond=0)
    hour = now.replace(minute=0, second=0)
    attempt_row(project="vision", node_pool="h100", gpu=8, started_at=hour - timedelta(hours=7), ended_at=None)
    attempt_row(project="speech", node_pool="h100", gpu=12, started_at=hour - timedelta(hours=14), ended_at=None)
    attempt_row(project="speech", node_pool="h100", gpu=4, started_at=hour - timedelta(hours=3), ended_at=None)
    for ago in range(2, 36, 3):
        start = hour - timedelta(hours=ago)
        attempt_row(project="vision", node_pool="a100", gpu=2, started_at=start, ended_at=start + timedelta(hours=2))
        attempt_row(
            project="speech",
            node_pool="h100",
            gpu=ago % 5 + 1,
            started_at=start,
            ended_at=start + timedelta(minutes=90),
        )
    train = Pool.objects.get(name="train")
    for ago, status in [(h, WorkflowStatus.COMPLETED) for h in range(1, 20)] + [
        (3, WorkflowStatus.FAILED),
        (6, WorkflowStatus.CANCELLED),
        (9, WorkflowStatus.FAILED_PREEMPTED),
    ]:
        made = WorkflowFactory(pool=train, status=status)
        Workflow.objects.filter(pk=made.pk).update(
            created_at=now - timedelta(hours=ago + 1), finished_at=now - timedelta(hours=ago)
        )


@pytest.mark.django_db(transaction=True)
def test_usage_pages_fit_a_phone_and_a_desktop(page, new_page, live_server, carved, teams):  # noqa: F811
    base = live_server.url
    usage_world(teams)
    h100 = NodePool.objects.get(name="h100")
    print(f"screenshots in {SHOTS}")
    admin = new_page()
    failures = collect_failures(page, admin)
    sign_in(page, base, "vera")
    sign_in_admin(admin, base, "boss")

    pages = [
        (page, "usage-pool", "/pools/train/", "#team-usage"),
        (page, "usage-workflows", "/workflows/", "#team-usage"),
        (admin, "usage-dashboard", "/admin/", "#dash-now svg.spark"),
        (admin, "usage-fairshare", f"/admin/quotas/nodepool/{h100.pk}/fairshare/", "#fairshare-history svg.spark"),
    ]
    assert walk(base, pages, ours=lambda who, name: name != "usage-dashboard") == {}  # Unfold's home is not ours
    page.goto(f"{base}/workflows/")
    assert page.locator("#team-usage .usage-line").count() == 2  # vision in h100 and a100
    h100_line = " ".join(page.text_content("#team-usage .usage-line[data-node-pool='h100']").split())
    assert "deserved 8 GPUs" in h100_line and " deserved This month" in h100_line  # the yardstick: deserved
    assert admin.locator("#fairshare-history svg.spark[data-points='24']").count() >= 2
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_the_admin_home_refreshes_in_place(page, live_server, carved, teams):  # noqa: F811
    base = live_server.url
    usage_world(teams)
    failures = collect_failures(page)
    page.set_viewport_size({"width": DESKTOP, "height": 500})
    sign_in_admin(page, base, "boss")
    queued = int(page.get_attribute("#dash-now-queued", "data-value"))
    page.evaluate("window.scrollTo(0, 300)")
    WorkflowFactory(pool=Pool.objects.get(name="train"), status=WorkflowStatus.QUEUED)
    # the script refreshes when the tab comes back into view (and every 30 s): no need to wait that long
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    page.wait_for_function(
        f"document.querySelector('#dash-now-queued').dataset.value === '{queued + 1}'", timeout=10_000
    )
    assert page.evaluate("window.scrollY") == 300 and page.evaluate("document.documentElement.dataset.refreshedAt")
    assert failures == []
