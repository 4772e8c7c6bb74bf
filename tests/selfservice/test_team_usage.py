"""Researchers' "your team's usage" (selfservice.services.team_usage, docs/self-service.md "Your team's usage"):
GPU-hours of the viewer's projects this week and this month, from the usage report, against the GPU-hours they
deserved over the same time (the hourly deserved samples, today's deserved where there is none), the fair share
now beside it; on the pool page and in My workflows, constant queries.

The world is tests/quotas/test_pages.py's: node pools h100 (quotas: vision and speech deserve 8 GPUs each) and
a100 (no quotas); vera belongs to vision.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from pools.models import Pool
from quotas.models import NodePool
from quotas.services import quotas
from quotas.services.standing import standings
from selfservice.services import team_usage
from tests.factories import UserFactory, WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    backend,
    carved,
    kube_server,
    pools_config,
    synced,
    teams,
)
from tests.quotas.test_pages import signed_in
from tests.quotas.test_pages import world as quota_world  # noqa: F401  (fixture)
from tests.usage.factories import attempt_row
from usage.models import DeservedSample
from usage.services.guarantee import hour_seconds
from workflows.models import WorkflowStatus

pytestmark = pytest.mark.django_db


def overlap(start: datetime, end: datetime, since: datetime, now: datetime) -> float:
    return max(0.0, (min(end, now) - max(start, since)).total_seconds())


@pytest.fixture
def used(quota_world):  # noqa: F811
    """vision: 2 GPUs in h100 from the later of this week's and this month's start for up to an hour, 1 GPU in
    h100 just before the earlier one (counted in neither), 4 GPUs running in a100 for 10 minutes; speech
    (not vera's) 8 GPUs in h100."""
    now = timezone.now()
    week, month = team_usage.week_and_month(now)
    later, earlier = max(week, month), min(week, month)
    end = min(later + timedelta(hours=1), now - timedelta(seconds=1))
    attempt_row(project="vision", node_pool="h100", gpu=2, started_at=later, ended_at=end)
    attempt_row(project="vision", node_pool="h100", gpu=1, started_at=earlier - timedelta(hours=2))
    attempt_row(project="vision", node_pool="a100", gpu=4, started_at=now - timedelta(minutes=10), ended_at=None)
    attempt_row(project="speech", node_pool="h100", gpu=8, started_at=later, ended_at=end)
    return {"now": now, "week": week, "month": month, "h100": 2 * (end - later).total_seconds()}


def test_my_teams_usage_this_week_and_month_against_what_it_deserved(used, quota_world):  # noqa: F811
    now = timezone.now()
    found = team_usage.for_viewer(quota_world["vera"], now=now)
    assert (found.week_start, found.month_start, found.known_from) == (used["week"], used["month"], None)
    lines = {(line.project, line.node_pool): line for line in found.lines}
    assert set(lines) == {("vision", "h100"), ("vision", "a100")}  # speech is not vera's
    h100 = NodePool.objects.get(name="h100")
    share = standings([h100], ["vision"])[h100.pk].projects[0].gpu.fair_share
    line = lines[("vision", "h100")]
    assert line.quota == team_usage.Quota(deserved=8, fair_share=share)
    assert line.week_hours == line.month_hours == round(used["h100"] / 3600, 1)
    # no deserved sample yet: today's 8 deserved GPUs × the hours gone, whatever the fair share (0 when idle)
    assert line.week_deserved_hours == round(8 * int((now - used["week"]).total_seconds()) / 3600, 1)
    assert line.month_deserved_hours == round(8 * int((now - used["month"]).total_seconds()) / 3600, 1)
    a100 = lines[("vision", "a100")]  # running: counted up to now; a100 has no quota rows
    assert a100.quota is None and not a100.compared and a100.week_hours == round(4 * 600 / 3600, 1)


def test_sampled_hours_count_what_was_deserved_then(used, quota_world):  # noqa: F811
    """vision deserved 4 GPUs in the first two hours of the later period start, nothing in the third (only speech
    was sampled then); every other hour has no sample and counts today's 8."""
    now = timezone.now()
    hours = [max(used["week"], used["month"]) + timedelta(hours=index) for index in range(3)]
    for hour in hours[:2]:
        DeservedSample.objects.create(hour=hour, node_pool="h100", project="vision", gpu_deserved=4)
    DeservedSample.objects.create(hour=hours[2], node_pool="h100", project="speech", gpu_deserved=8)
    found = team_usage.for_viewer(quota_world["vera"], now=now)
    [line] = [line for line in found.lines if line.node_pool == "h100"]
    assert found.known_from == hours[0]
    sampled = sum(hour_seconds(hour, now) for hour in hours)
    for since, deserved in ((used["week"], line.week_deserved_hours), (used["month"], line.month_deserved_hours)):
        unsampled = int((now - since).total_seconds()) - sampled
        expected = 4 * sum(hour_seconds(hour, now) for hour in hours[:2]) + 8 * unsampled
        assert deserved == round(expected / 3600, 1)


def test_the_pool_page_shows_my_teams_usage_in_its_node_pools(used, quota_world):  # noqa: F811
    html = signed_in(quota_world["vera"]).get("/pools/train/").content.decode()
    box = html[html.index('id="team-usage"') : html.index("</section>", html.index('id="team-usage"'))]
    assert "GPU-hours your project <b>deserved</b> over the same time" in box
    vision = box[box.index('data-node-pool="h100"') :]
    assert "deserved 8 GPUs · fair share now" in vision
    hours = round(used["h100"] / 3600, 1)
    assert re.search(rf'data-period="week">.*?<b>{hours}</b> GPU-hours of <b>[\d.]+</b> deserved', vision, re.S)
    assert 'data-node-pool="a100"' in box and "no quota here" in box
    assert 'data-project="speech"' not in box


def test_my_workflows_show_my_teams_usage_in_constant_queries(used, quota_world):  # noqa: F811
    client = signed_in(quota_world["vera"])
    html = client.get("/workflows/").content.decode()
    assert 'id="team-usage"' in html and 'data-project="vision"' in html
    assert 'id="team-usage"' not in client.get("/workflows/", HTTP_HX_REQUEST="true").content.decode()

    def grow():
        for index in range(4):
            WorkflowFactory(pool=Pool.objects.get(name="train"), submitted_by=quota_world["vera"])
            attempt_row(project="vision", node_pool=f"np-{index}", started_at=used["now"] - timedelta(hours=1))
        WorkflowFactory(pool=Pool.objects.get(name="train"), status=WorkflowStatus.QUEUED, node_pool="h100")

    assert_constant_queries(lambda: client.get("/workflows/"), grow)
    assert len(re.findall(r'class="usage-line"', client.get("/workflows/").content.decode())) == 6


def test_someone_in_no_project_sees_no_team_usage(used):
    html = signed_in(UserFactory(username="solo")).get("/workflows/").content.decode()
    assert 'id="team-usage"' not in html


def test_a_node_pool_where_my_project_holds_only_the_zero_quota_gets_no_line_until_it_holds_one(quota_world):  # noqa: F811
    """Every project has a zero row in every node pool: that is no quota, and a fleet's hundred node pools would
    each give a line of zeros. A deserved share or a limit is, at once (the trees' cache moves with the write)."""
    ivan = UserFactory(username="ivan")
    ivan.groups.add(quota_world["infer"].role.group)
    assert team_usage.for_viewer(ivan).lines == []  # h100 is managed, but infer holds 0 there
    quotas.set_quota(None, "h100", "project", "infer", "gpu", deserved=0, limit=3)
    lines = team_usage.for_viewer(ivan).lines
    assert [(line.project, line.node_pool, line.quota.deserved) for line in lines] == [("infer", "h100", 0)]
    quotas.set_quota(None, "a100", "department", "ops", "gpu", deserved=2)
    quotas.set_quota(None, "a100", "project", "infer", "gpu", deserved=2)
    assert [line.node_pool for line in team_usage.for_viewer(ivan).lines] == ["a100", "h100"]
