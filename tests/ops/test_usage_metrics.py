"""The usage record on /metrics (usage.services.meters, docs/operations.md "Usage: GPU-seconds and cost"): per
project and node pool, ended attempts as counters, running ones as gauges, together the usage report's total;
the counters equal the sums of the raw records, never go down as attempts close, are rolled up, or are removed
by retention; a scrape reads the totals and the attempts not rolled up, in two queries whatever the record's
size."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test.utils import override_settings
from django.utils import timezone

from tests.ops.test_metrics import scrape, value
from tests.queries import assert_constant_queries, queries_of
from tests.usage.factories import attempt_row
from usage.models import Outcome, TaskAttempt, UsageRollup
from usage.services import meters, retention
from usage.services.report import ReportQuery, usage
from usage.services.rollup import floor_hour, roll_up

pytestmark = pytest.mark.django_db

COUNTER, COST = "portal_usage_gpu_seconds_total", "portal_usage_cost_dollars_total"
RUNNING, RUNNING_GPUS = "portal_usage_running_gpu_seconds", "portal_usage_running_gpus"


@pytest.fixture
def record():
    """train/a100: 2 GPUs for an hour, ended 3 hours ago ($5 an hour); vision/h100: 4 GPUs running for 30 minutes;
    train/h100: 1 GPU for 10 minutes yesterday, rolled up."""
    now = timezone.now().replace(microsecond=0)
    yesterday = now - timedelta(days=1)
    attempt_row(node_pool="h100", started_at=yesterday, ended_at=yesterday + timedelta(minutes=10))
    roll_up(now)
    attempt_row(gpu=2, started_at=now - timedelta(hours=4), ended_at=now - timedelta(hours=3))  # not rolled up yet
    running = attempt_row(
        project="vision", node_pool="h100", gpu=4, started_at=now - timedelta(minutes=30), ended_at=None
    )
    return {"now": now, "running": running}


def test_attempts_show_per_project_and_node_pool(client, record):
    samples = scrape(client)
    assert value(samples, COUNTER, project="train", node_pool="a100") == 2 * 3600
    # $5 an hour for an hour, rounded down to the micro-dollar in each clock hour it touched (as the report does)
    assert value(samples, COST, project="train", node_pool="a100") == pytest.approx(5.0, abs=2e-6)
    assert value(samples, COUNTER, project="train", node_pool="h100") == 600
    assert value(samples, COUNTER, project="vision", node_pool="h100") == 0  # nothing ended yet
    assert value(samples, RUNNING_GPUS, project="vision", node_pool="h100") == 4
    assert 4 * 1800 <= value(samples, RUNNING, project="vision", node_pool="h100") < 4 * 1900


def test_counter_plus_gauge_is_the_usage_reports_total(record):
    now = timezone.now().replace(microsecond=0)
    found = meters.meters(now)
    report = usage(
        ReportQuery(floor_hour(now) - timedelta(days=3), floor_hour(now) + timedelta(hours=1), by=meters.BY), now=now
    )
    assert {tuple(r.group.values()): (r.gpu_seconds, r.cost_micros) for r in report} == {
        key: (m.gpu_seconds + m.running_gpu_seconds, m.cost_micros + m.running_cost_micros) for key, m in found.items()
    }


def test_counters_never_go_down_as_attempts_close_roll_up_and_leave(client, record):
    def counters():
        samples = scrape(client)
        return {key: samples[key] for key in samples if key[0] in (COUNTER, COST)}

    seen = [counters()]
    # the running attempt ends at the cluster's time, before this scrape: the counter takes it whole
    TaskAttempt.objects.filter(pk=record["running"].pk).update(
        ended_at=timezone.now().replace(microsecond=0) - timedelta(minutes=1), outcome=Outcome.COMPLETED
    )
    seen.append(counters())
    assert value(seen[-1], COUNTER, project="vision", node_pool="h100") >= 4 * 29 * 60
    roll_up()  # (its repair closes no attempt now: none is running)
    assert not TaskAttempt.objects.filter(rolled_up=False).exists()
    seen.append(counters())
    assert seen[-1] == seen[-2]  # rolled up: the same numbers, from the rollups now
    with override_settings(USAGE_ROLLUP_RETENTION_DAYS=0, USAGE_RAW_RETENTION_DAYS=0):
        removed = retention.prune(timezone.now() + timedelta(days=2))
    assert removed["rollups"] > 0 and removed["attempts"] == 3
    seen.append(counters())
    assert seen[-1] == seen[-2]  # gone from the record, kept in the totals
    for before, after in zip(seen, seen[1:], strict=False):
        assert all(after.get(key, 0) >= amount for key, amount in before.items())


def test_counters_are_the_sums_of_the_raw_records(record):
    """Whatever part is rolled up: GPU × seconds of each ended attempt; running ones up to the reading."""
    now = record["now"]
    attempt_row(project="vision", node_pool="h100", gpu=3, started_at=now - timedelta(hours=30))  # closed, pending
    roll_up(now - timedelta(hours=1), repair=False)  # the earlier ones counted in the totals now
    attempt_row(gpu=2, started_at=now - timedelta(minutes=50), ended_at=now - timedelta(minutes=5))
    found = meters.meters(now)
    expected: dict[tuple[str, str], list[int]] = {}
    for row in TaskAttempt.objects.all():
        sums = expected.setdefault((row.project, row.node_pool), [0, 0])
        seconds = int(((row.ended_at or now) - row.started_at).total_seconds())
        sums[row.ended_at is None] += row.gpu * seconds
    assert {key: [m.gpu_seconds, m.running_gpu_seconds] for key, m in found.items()} == expected


def test_the_usage_part_of_a_scrape_reads_two_small_tables_in_constant_queries(record):
    def grow():
        for index in range(5):
            attempt_row(project=f"p{index}", node_pool=f"np{index}", started_at=record["now"] - timedelta(days=40))
        roll_up()
        for index in range(5):
            attempt_row(project=f"p{index}", started_at=record["now"] - timedelta(hours=1), ended_at=None)

    assert assert_constant_queries(meters.meters, grow) == 2  # the totals, the attempts not rolled up
    read = " ".join(queries_of(meters.meters))
    assert UsageRollup._meta.db_table not in read  # the rollups, however long, are not read
