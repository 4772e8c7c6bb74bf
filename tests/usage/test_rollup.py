"""Rollups (docs/usage.md, "Rollups"): whatever order attempts start and end in and however often the job runs,
the rollups equal a recomputation from the raw records, and a report counts every attempt exactly once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.usage.factories import T0, attempt_row
from usage.models import Granularity, TaskAttempt, UsageRollup
from usage.services import report, retention, rollup

pytestmark = pytest.mark.django_db

ATTEMPTS = st.lists(
    st.tuples(
        st.integers(0, 3 * 86400),  # start, seconds after T0
        st.integers(0, 30 * 3600),  # duration
        st.sampled_from(["train", "eval", "serve"]),
        st.sampled_from(["a100", "default"]),
        st.integers(0, 8),  # GPUs
        st.integers(0, 3),  # the job run (0..2) after which it ends; 3: still running
    ),
    max_size=25,
)


def _snapshot() -> list[tuple]:
    fields = ("granularity", "period_start", "project", "node_pool", *rollup.MEASURES)
    return sorted(UsageRollup.objects.values_list(*fields))


def _raw_gpu_seconds(now) -> int:
    total = 0
    for row in TaskAttempt.objects.all():
        end = row.ended_at or now
        total += row.gpu * int((end - row.started_at).total_seconds())
    return total


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=ATTEMPTS)
def test_incremental_rollups_equal_a_rebuild_and_reports_count_each_attempt_once(attempts):
    TaskAttempt.objects.all().delete()
    UsageRollup.objects.all().delete()
    now = T0 + timedelta(days=5)
    rows = [
        attempt_row(
            started_at=T0 + timedelta(seconds=start),
            ended_at=None,
            project=project,
            node_pool=node_pool,
            gpu=gpus,
            hourly_cost_micros=1_234_567 * gpus,
        )
        for start, _, project, node_pool, gpus, _ in attempts
    ]
    for run in range(3):
        for row, (start, duration, *_, ends_after) in zip(rows, attempts, strict=True):
            if ends_after == run:
                TaskAttempt.objects.filter(pk=row.pk).update(
                    ended_at=T0 + timedelta(seconds=start + duration), outcome="completed"
                )
        query = report.ReportQuery(T0, now, by=("project",))
        assert sum(r.gpu_seconds for r in report.usage(query, now=now)) == _raw_gpu_seconds(now)
        rollup.roll_up(now, repair=False)  # the attempts here belong to no task
        assert sum(r.gpu_seconds for r in report.usage(query, now=now)) == _raw_gpu_seconds(now)
    incremental = _snapshot()
    rollup.rebuild()
    assert _snapshot() == incremental
    days = UsageRollup.objects.filter(granularity=Granularity.DAY)
    hours = UsageRollup.objects.filter(granularity=Granularity.HOUR)
    assert sum(days.values_list("cost_micros", flat=True)) == sum(hours.values_list("cost_micros", flat=True))


def test_an_hour_split_attempt_adds_up_per_hour_and_per_day():
    attempt_row(started_at=T0 + timedelta(minutes=30), ended_at=T0 + timedelta(hours=2), gpu=2, hourly_cost_micros=3600)
    rollup.roll_up(T0 + timedelta(days=1), repair=False)
    hours = dict(UsageRollup.objects.filter(granularity=Granularity.HOUR).values_list("period_start", "gpu_seconds"))
    assert hours == {T0: 2 * 1800, T0 + timedelta(hours=1): 2 * 3600}
    [day] = UsageRollup.objects.filter(granularity=Granularity.DAY)
    assert (day.period_start, day.gpu_seconds, day.cost_micros, day.attempts) == (T0, 2 * 5400, 1800 + 3600, 2)


def test_report_by_day_uses_days_inside_and_hours_at_the_edges():
    attempt_row(started_at=T0 - timedelta(hours=1), ended_at=T0 + timedelta(days=2, hours=1), gpu=1)
    rollup.roll_up(T0 + timedelta(days=3), repair=False)
    query = report.ReportQuery(T0 - timedelta(minutes=30), T0 + timedelta(days=2), by=("project",), granularity="day")
    rows = report.usage(query, now=T0 + timedelta(days=3))
    assert [(r.period, r.gpu_seconds) for r in rows] == [
        (T0 - timedelta(days=1), 3600),  # the period starts at the whole hour before T0
        (T0, 86400),
        (T0 + timedelta(days=1), 86400),
    ]


def test_retention_keeps_rollups_longer_than_raw_records(settings):
    settings.USAGE_RAW_RETENTION_DAYS, settings.USAGE_ROLLUP_RETENTION_DAYS = 90, 730
    old = attempt_row(started_at=T0 - timedelta(days=100))
    rollup.roll_up(T0, repair=False)
    assert retention.prune(now=T0)["attempts"] == 1
    assert not TaskAttempt.objects.filter(pk=old.pk).exists()
    assert UsageRollup.objects.filter(period_start=(T0 - timedelta(days=100))).exists()
    assert retention.prune(now=T0 + timedelta(days=700))["rollups"] == 2  # its hour and its day
