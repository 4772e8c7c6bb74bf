"""The admin's usage page (docs/usage.md, "The usage page"): its ranges, its four charts with their tables, the
CSV of each chart, who may see it, and a constant number of queries whatever the record holds."""

from __future__ import annotations

import csv
import io
import itertools
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from access.services import roles
from selfservice import usage_page
from tests.factories import WorkflowFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    backend,
    carved,
    kube_server,
    pools_config,
    synced,
    teams,
)
from tests.selfservice.conftest import person
from tests.usage.factories import attempt_row
from usage.models import DeservedSample, WorkflowRecord
from usage.services.rollup import floor_hour
from workflows.models import WorkflowStatus

pytestmark = pytest.mark.django_db
NUMBERS = itertools.count(1)


def url(**params) -> str:
    query = "&".join(f"{key}={value}" for key, value in params.items())
    return reverse("admin:usage_usagerollup_changelist") + (f"?{query}" if query else "")


def record(submitted: datetime, waited: timedelta) -> WorkflowRecord:
    return WorkflowRecord.objects.create(
        workflow_id=f"done-{next(NUMBERS)}",
        pool="train",
        priority="NORMAL",
        status="COMPLETED",
        submitted_at=submitted,
        admitted_at=submitted + waited,
        running_at=submitted + waited + timedelta(seconds=5),
        finished_at=submitted + waited + timedelta(minutes=30),
    )


def usage_world(teams, hours_ago: int = 3):  # noqa: F811
    """Two hours of h100 use by vision and speech, vision guaranteed 8 GPUs, two finished waits, one queued."""
    now = timezone.now()
    start = floor_hour(now) - timedelta(hours=hours_ago)
    attempt_row(
        project="vision",
        department="research",
        node_pool="h100",
        gpu=4,
        started_at=start,
        ended_at=start + timedelta(hours=2),
        hourly_cost_micros=8_000_000,
    )
    attempt_row(
        project="speech",
        department="research",
        node_pool="h100",
        gpu=2,
        started_at=start,
        ended_at=start + timedelta(hours=1),
    )
    attempt_row(project="infer", department="ops", node_pool="a100", gpu=1, started_at=start, ended_at=None)
    for hour in range(2):
        DeservedSample.objects.create(
            hour=start + timedelta(hours=hour),
            node_pool="h100",
            project="vision",
            department="research",
            gpu_deserved=8,
        )
    record(start, timedelta(minutes=2))
    record(start + timedelta(minutes=10), timedelta(minutes=40))
    WorkflowFactory(status=WorkflowStatus.QUEUED, node_pool="h100", project=teams["vision"])
    return start


@pytest.fixture
def boss(db):
    roles.ensure_builtin_roles()
    return person("boss", "osmo-admin")


def test_the_page_draws_the_four_charts_each_with_its_table(client, boss, carved, teams):  # noqa: F811
    usage_world(teams)
    client.force_login(boss)
    answer = client.get(url(range="24h"))
    assert answer.status_code == 200
    page = answer.context
    pools = {pool["name"]: pool for pool in page["allocation"]["node_pools"]}
    assert pools["h100"]["capacity"] == 32  # four 8-GPU nodes, today
    assert [(r["project"], r["gpu_hours"]) for r in pools["h100"]["rows"]] == [("vision", 8.0), ("speech", 2.0)]
    [vision] = [row for row in page["guarantee"]["rows"] if row["project"] == "vision"]
    assert (vision["deserved"], vision["used"], vision["idle"], vision["utilisation"]) == (16.0, 8.0, 8.0, 50.0)
    assert page["queue"]["waiting_now"] == 1 and page["queue"]["p95"] == 40 * 60
    research, ops = page["cost"]["rows"]  # vision 2 h at 8 USD and speech 1 h at 5; infer running 3 h+ at 5
    assert (research["department"], round(research["cost"], 2), ops["department"]) == ("research", 21.0, "ops")
    assert 15 <= ops["cost"] <= 20
    html = answer.content.decode()
    for chart in usage_page.CHARTS:
        assert f'id="chart-{chart}"' in html and f"csv={chart}" in html
    assert 'href="?range=7d"' in html and "usage-custom" in html


def test_each_chart_downloads_as_csv(client, boss, carved, teams):  # noqa: F811
    start = usage_world(teams)
    client.force_login(boss)

    def rows(chart):
        answer = client.get(url(range="24h", csv=chart))
        assert answer["Content-Type"].startswith("text/csv") and "attachment" in answer["Content-Disposition"]
        return list(csv.DictReader(io.StringIO(answer.content.decode())))

    allocation = rows("allocation")
    first = [r for r in allocation if r["period"] == start.isoformat() and r["node_pool"] == "h100"]
    assert [(r["project"], r["gpu_hours"], r["average_gpus"], r["capacity_gpus"]) for r in first] == [
        ("vision", "4.0", "4.0", "32"),
        ("speech", "2.0", "2.0", "32"),
    ]
    assert rows("guarantee")[0] == {
        "project": "vision",
        "deserved_gpu_hours": "16.0",
        "gpu_hours": "8.0",
        "guarantee_used_gpu_hours": "8.0",
        "utilisation_percent": "50.0",
        "idle_guarantee_gpu_hours": "8.0",
    }
    queue = {r["period"]: r for r in rows("queue")}
    first_hour = queue[start.isoformat()]  # both waits ended in it: 2 min and 40 min
    assert (first_hour["admitted"], first_hour["wait_p50_seconds"], first_hour["wait_p95_seconds"]) == (
        "2",
        "120",
        "2400",
    )
    cost = rows("cost")
    assert {(r["department"], r["cost_usd"]) for r in cost if r["period"] == start.isoformat()} == {
        ("research", "13.0"),  # vision's 8 USD/h and the default 5 USD/h of speech's attempt
        ("ops", "5.0"),
    }


def test_a_custom_range_per_day_and_a_refused_one(client, boss, teams):  # noqa: F811
    client.force_login(boss)
    answer = client.get(url(range="custom", **{"from": "2026-10-01", "to": "2026-10-20"}))
    win = answer.context["win"]
    assert (win.key, win.granularity, win.start, win.end) == (
        "custom",
        "day",
        datetime(2026, 10, 1, tzinfo=UTC),
        datetime(2026, 10, 21, tzinfo=UTC),
    )
    assert len(answer.context["queue"]["rows"]) == 20
    refused = client.get(url(range="custom", **{"from": "someday", "to": "2026-10-20"}))
    assert refused.context["win"].key == "7d" and "from" in refused.context["error"]
    assert "Range refused" in refused.content.decode()


def test_only_those_who_may_read_quotas_see_it(client, teams):  # noqa: F811
    roles.ensure_builtin_roles()
    client.force_login(person("rita", "osmo-user", teams["vision"].role.name))
    assert client.get(url()).status_code in (302, 403)


def test_the_page_runs_a_constant_number_of_queries(client, boss, carved, teams):  # noqa: F811
    usage_world(teams)
    client.force_login(boss)

    def more():
        usage_world(teams, hours_ago=6)
        for n in range(10):
            attempt_row(
                project=f"p{n}", department=f"d{n}", node_pool=f"np{n}", started_at=timezone.now() - timedelta(hours=n)
            )
            WorkflowFactory(status=WorkflowStatus.QUEUED, node_pool="h100", project=teams["speech"])

    assert_constant_queries(lambda: client.get(url(range="7d")), more, at_most=30)
