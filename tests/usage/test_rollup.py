"""Rollups (docs/usage.md, "Rollups"): whatever order attempts start and end in and however often the job runs,
the rollups equal a recomputation from the raw records, and a report counts every attempt exactly once."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
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


def _gpu_hours(start, end, now) -> float:
    query = report.ReportQuery(start, end, by=("project",))
    return sum(r.gpu_seconds for r in report.usage(query, now=now)) / 3600


def test_a_rebuild_of_part_of_an_attempt_leaves_the_rest_to_the_job_and_counts_it_once():
    """`usage rebuild --from D --to D` over a day an attempt not rolled up yet runs past: the report still counts
    all of its hours, before and after the job next runs (it was marked rolled up with only the day's hours)."""
    now = T0 + timedelta(days=5)
    attempt_row(started_at=T0 + timedelta(hours=20), ended_at=T0 + timedelta(hours=28), gpu=1)  # 4 h each day
    call_command("usage", "rebuild", "--from", "2026-11-01", "--to", "2026-11-01", stdout=io.StringIO())
    assert _gpu_hours(T0, T0 + timedelta(days=2), now) == 8
    rollup.roll_up(now, repair=False)
    assert _gpu_hours(T0, T0 + timedelta(days=2), now) == 8
    incremental = _snapshot()
    rollup.rebuild(now=now)
    assert _snapshot() == incremental


def test_an_attempt_that_outlives_the_raw_retention_does_not_erase_pruned_attempts_from_its_hours(settings):
    """Raw records kept 7 days; an attempt runs 10 days. Others it ran beside are pruned meanwhile; when it ends,
    neither the job nor a rebuild recomputes its old hours from what is left of the raw record (they lost the
    pruned attempts' GPU-hours): hours past the raw retention are added to, never recomputed."""
    settings.USAGE_RAW_RETENTION_DAYS = 7
    attempt_row(started_at=T0, ended_at=T0 + timedelta(hours=1), gpu=2)  # pruned later
    long = attempt_row(started_at=T0, ended_at=None, gpu=1)
    rollup.roll_up(T0 + timedelta(days=1), repair=False)
    first_hour = (T0, T0 + timedelta(hours=1))
    assert _gpu_hours(*first_hour, T0 + timedelta(days=1)) == 3
    assert retention.prune(now=T0 + timedelta(days=8))["attempts"] == 1
    TaskAttempt.objects.filter(pk=long.pk).update(ended_at=T0 + timedelta(days=10), outcome="completed")
    now = T0 + timedelta(days=10)
    rollup.roll_up(now, repair=False)
    assert _gpu_hours(*first_hour, now) == 3
    assert _gpu_hours(T0, now, now) == 2 + 240
    incremental = _snapshot()
    rollup.rebuild(now=now)  # from the oldest raw record: the long attempt's start
    assert _snapshot() == incremental
    out = io.StringIO()
    call_command("usage", "rebuild", stdout=out)
    assert _snapshot() == incremental
    assert "UTC are past the raw records' retention: kept as rolled up" in out.getvalue()
