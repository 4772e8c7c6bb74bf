"""The fair-share page's last 24 hours (quotas.services.fairshare_history): per project, a sparkline of 24 hourly
points of the GPUs its pods held in the node pool, from the usage record; the page refreshes itself.

The world is tests/quotas/test_pages.py's (node pool h100: vision and speech hold quota rows)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from quotas.models import NodePool
from quotas.services.fairshare_history import last_day
from tests.queries import assert_constant_queries
from tests.quotas.test_pages import world  # noqa: F401  (fixture)
from tests.usage.factories import attempt_row

pytestmark = pytest.mark.django_db


def test_each_project_gets_a_sparkline_of_24_hourly_points(world, admin_client):  # noqa: F811
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    attempt_row(project="vision", node_pool="h100", gpu=2, started_at=hour - timedelta(hours=3), ended_at=None)
    attempt_row(project="vision", node_pool="a100", gpu=8, started_at=hour - timedelta(hours=3), ended_at=None)
    attempt_row(project="", node_pool="h100", gpu=1, started_at=hour - timedelta(hours=5), ended_at=hour)
    h100 = NodePool.objects.get(name="h100")
    found = {p.project: p for p in last_day(h100, ["speech", "vision"]).projects}
    assert list(found) == ["speech", "vision", "no project"]  # the chart's order, then others that ran here
    assert all(len(p.gpus) == 24 for p in found.values())
    assert found["vision"].gpus[-4:] == [2.0] * 4 and found["vision"].gpus[-5] == 0  # a100's 8 GPUs: not here
    assert found["no project"].gpus[-7:] == [0, 1.0, 1.0, 1.0, 1.0, 1.0, 0] and found["speech"].peak == 0
    html = admin_client.get(reverse("admin:quotas_nodepool_fairshare", args=[h100.pk])).content.decode()
    history = html[html.index('id="fairshare-history"') :]
    rows = re.findall(r'<tr data-project="([^"]+)">.*?data-points="(\d+)"', history, re.S)
    assert ("vision", "24") in rows and len(rows) >= 3 and {points for _, points in rows} == {"24"}
    assert 'data-refresh-parts="fairshare fairshare-history"' in html and "portal/refresh.js" in html


def test_the_history_keeps_the_page_in_constant_queries(world, admin_client):  # noqa: F811
    url = reverse("admin:quotas_nodepool_fairshare", args=[NodePool.objects.get(name="h100").pk])

    def grow():
        for index in range(5):
            attempt_row(project=f"team-{index}", node_pool="h100", started_at=timezone.now() - timedelta(hours=2))

    assert_constant_queries(lambda: admin_client.get(url), grow)
