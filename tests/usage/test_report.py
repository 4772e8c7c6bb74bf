"""The consumption report (docs/usage.md, "Reports"): its totals are the raw sums whether the attempts are rolled
up or not and running ones count up to now; the idle guarantee's arithmetic; the options as people type them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teams.quota_visibility import QuotaView
from tests.usage.factories import T0, attempt_row
from usage.models import DeservedSample, TaskAttempt, UsageRollup
from usage.services import consumption, guarantee
from usage.services.report import ReportError, ReportQuery, period, usage
from usage.services.rollup import roll_up

pytestmark = pytest.mark.django_db
NOW = T0 + timedelta(days=3, hours=5, minutes=17, seconds=11)

ATTEMPT = st.tuples(
    st.integers(0, 3 * 24 * 3600),  # start, seconds after T0
    st.one_of(st.none(), st.integers(1, 30 * 3600)),  # length; None: still running
    st.integers(0, 8),  # GPUs
    st.sampled_from(["train", "vision"]),
    st.booleans(),  # rolled up before the report (if closed by then)
)


def overlap_seconds(started, ended, start, end) -> int:
    return max(0, int((min(ended, end) - max(started, start)).total_seconds()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=st.lists(ATTEMPT, max_size=8), window=st.tuples(st.integers(0, 76), st.integers(1, 90)))
def test_report_totals_are_the_raw_sums_rolled_up_or_not_running_ones_up_to_now(attempts, window):
    TaskAttempt.objects.all().delete()
    UsageRollup.objects.all().delete()
    early = [a for a in attempts if a[4] and a[1] is not None]  # closed before the rollup job ran
    for start, length, gpus, project, _ in early:
        _attempt(start, length, gpus, project)
    roll_up(now=NOW)
    for start, length, gpus, project, _ in (a for a in attempts if a not in early):  # ended later, or running
        _attempt(start, length, gpus, project)
    start, end = period(T0 + timedelta(hours=window[0]), T0 + timedelta(hours=window[0] + window[1]), NOW)
    expected = sum(
        row.gpu * overlap_seconds(row.started_at, row.ended_at or NOW, start, min(end, NOW))
        for row in TaskAttempt.objects.all()
    )
    rows = usage(ReportQuery(start, end, ("project",)), NOW)
    assert sum(row.gpu_seconds for row in rows) == expected
    daily = usage(ReportQuery(start, end, ("project",), "day"), NOW)
    assert sum(row.gpu_seconds for row in daily) == expected


def _attempt(start: int, length: int | None, gpus: int, project: str) -> None:
    started = T0 + timedelta(seconds=start)
    ended = None if length is None else min(started + timedelta(seconds=length), NOW)
    attempt_row(started_at=started, ended_at=ended, gpu=gpus, project=project)


def test_idle_guarantee_is_the_deserved_seconds_each_hour_left_unused():
    assert guarantee.idle_seconds(2, 3600, 3600) == 3600  # one of two GPUs used
    assert guarantee.idle_seconds(2, 3600, 3 * 3600) == 0  # borrowing leaves nothing idle
    assert guarantee.idle_seconds(4, 1800, 0) == 7200  # half an hour of the running hour
    assert guarantee.hour_seconds(T0, T0 + timedelta(minutes=30)) == 1800
    assert guarantee.hour_seconds(T0 + timedelta(hours=2), T0) == 0


def test_the_report_adds_deserved_and_idle_guarantee_per_project_and_node_pool():
    for hour in range(3):
        at = T0 + timedelta(hours=hour)
        DeservedSample.objects.create(hour=at, node_pool="a100", project="train", gpu_deserved=2)
        DeservedSample.objects.create(hour=at, node_pool="a100", project="idle", gpu_deserved=1)
    attempt_row(started_at=T0, ended_at=T0 + timedelta(hours=1), gpu=3)  # hour 0: 3 of 2 (borrowing)
    attempt_row(started_at=T0 + timedelta(hours=1), ended_at=T0 + timedelta(hours=2), gpu=1)  # hour 1: 1 of 2
    query = consumption.parse(start="2026-11-01T00:00", end="2026-11-01T03:00", by=["project,node-pool"], now=NOW)
    rows = consumption.report(query, now=NOW).rows
    assert rows == [
        {
            "project": "train",
            "node_pool": "a100",
            "gpu_hours": 4.0,
            "cpu_hours": 2.0,
            "memory_gib_hours": 2.0,
            "cost_usd": 10.0,
            "deserved_gpu_hours": 6.0,
            "idle_guarantee_gpu_hours": 3.0,  # hour 0: 0, hour 1: 1, hour 2: 2
        },
        {
            "project": "idle",
            "node_pool": "a100",
            "gpu_hours": 0.0,
            "cpu_hours": 0.0,
            "memory_gib_hours": 0.0,
            "cost_usd": 0.0,
            "deserved_gpu_hours": 3.0,
            "idle_guarantee_gpu_hours": 3.0,
        },
    ]
    by_pool = consumption.report(consumption.parse(start="2026-11-01", end="2026-11-01", by=["pool"], now=NOW), now=NOW)
    assert "idle_guarantee_gpu_hours" not in by_pool.columns  # a sample knows nothing of pools


def test_hours_before_sampling_began_are_unknown_not_idle():
    """Sampling began at T0 + 2 h: the two hours before count neither deserved nor idle, each row of a period
    without a sample says unknown (None), and the report says from when the guarantee is known."""
    for hour in (2, 3, 4):
        DeservedSample.objects.create(
            hour=T0 + timedelta(hours=hour), node_pool="a100", project="train", gpu_deserved=2
        )
    attempt_row(started_at=T0, ended_at=T0 + timedelta(hours=3), gpu=1)  # hours 0-2, one GPU
    attempt_row(project="vision", started_at=T0 + timedelta(hours=2))  # sampled hour, no quota: known, deserved 0
    total = consumption.report(
        consumption.parse(start="2026-11-01T00:00", end="2026-11-01T05:00", by=["project"], now=NOW), now=NOW
    )
    by_project = {row["project"]: row for row in total.rows}
    assert (by_project["train"]["deserved_gpu_hours"], by_project["train"]["idle_guarantee_gpu_hours"]) == (6.0, 5.0)
    assert (by_project["vision"]["deserved_gpu_hours"], by_project["vision"]["idle_guarantee_gpu_hours"]) == (0, 0)
    assert (total.guarantee.known_from, total.guarantee.unknown_hours) == (T0 + timedelta(hours=2), 2)
    assert consumption.coverage_fields(total) == {
        "guarantee_known_from": "2026-11-01T02:00:00+00:00",
        "guarantee_unknown_hours": 2,
    }
    assert "known from 2026-11-01 02:00 UTC; 2 hour(s)" in consumption.coverage_note(total.guarantee)
    hourly = consumption.report(
        consumption.parse(
            start="2026-11-01T00:00", end="2026-11-01T05:00", by=["project"], granularity="hour", now=NOW
        ),
        now=NOW,
    )
    train = {row["period"][11:16]: row["idle_guarantee_gpu_hours"] for row in hourly.rows if row["project"] == "train"}
    assert train == {"00:00": None, "01:00": None, "02:00": 1.0, "03:00": 2.0, "04:00": 2.0}
    before = consumption.report(
        consumption.parse(start="2026-10-30", end="2026-10-31", by=["project"], now=NOW), now=NOW
    )
    assert before.guarantee.known_from is None and "unknown" in consumption.coverage_note(before.guarantee)


def test_a_viewer_sees_only_their_projects_rows():
    attempt_row(project="train")
    attempt_row(project="vision", gpu=2)
    query = consumption.parse(start="2026-11-01", end="2026-11-01", by=["department"], now=NOW)
    mine = QuotaView(everything=False, projects=frozenset({"vision"}))
    assert [row["gpu_hours"] for row in consumption.report(query, mine, NOW).rows] == [2.0]
    nobody = QuotaView(everything=False)
    assert consumption.report(query, nobody, NOW).rows == []
    assert [row["gpu_hours"] for row in consumption.report(query, now=NOW).rows] == [3.0]


def test_day_granularity_and_dates():
    attempt_row(started_at=T0 + timedelta(hours=23), ended_at=T0 + timedelta(hours=25), gpu=1)
    query = consumption.parse(start="2026-11-01", end="2026-11-02", granularity="day", now=NOW)
    assert (query.start, query.end) == (T0, T0 + timedelta(days=2))  # `to` as a date includes that day
    rows = consumption.report(query, now=NOW).rows
    assert [(row["period"], row["gpu_hours"]) for row in rows] == [
        ("2026-11-01T00:00:00+00:00", 1.0),
        ("2026-11-02T00:00:00+00:00", 1.0),
    ]


@pytest.mark.parametrize(
    ("options", "field", "value"),
    [
        ({"start": "yesterday"}, "--from", "yesterday"),
        ({"end": "2026-13-01"}, "--to", "2026-13-01"),
        ({"start": "2026-11-02", "end": "2026-11-01"}, "--to", "2026-11-01"),
        ({"start": "2020-01-01", "end": "2026-11-01"}, "--from", "2020-01-01"),
        ({"by": ["project,gpu"]}, "--by", "gpu"),
        ({"granularity": "week"}, "--granularity", "week"),
    ],
)
def test_bad_options_name_the_flag_and_the_value(options, field, value):
    with pytest.raises(ReportError) as refused:
        consumption.parse(**options, now=NOW)
    assert (refused.value.field, refused.value.value) == (field, value)
