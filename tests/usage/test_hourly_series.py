"""The sparklines' GPUs in use (usage.services.hourly_series.gpu_seconds) are the consumption report's GPU-seconds
hour by hour (usage.services.report.usage, rounding per attempt and hour included) for any mix of attempts: rolled
up or not, running, closed, shorter than a second, on hour boundaries, begun before the period or after now, in
any group. Checked against the report itself on generated attempts."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from tests.usage.factories import T0, attempt_row
from usage.services import rollup
from usage.services.hourly_series import HOURS, gpu_seconds, gpus_in_use, hours
from usage.services.report import ReportQuery, usage

NOW = T0 + timedelta(days=3, minutes=37, seconds=12)
PROJECTS = ("train", "infer", "eval")


def by_report(query: ReportQuery, now) -> dict[tuple, list[int]]:
    index = {start: position for position, start in enumerate(hours(now))}
    found: dict[tuple, list[int]] = {}
    for row in usage(query, now=now):
        key = tuple(row.group[name] for name in query.by)
        found.setdefault(key, [0] * HOURS)[index[row.period]] += row.gpu_seconds
    return found


def generated_attempts(seed: int) -> None:
    chance = random.Random(seed)
    first = NOW - timedelta(hours=30)
    for _ in range(120):
        started = first + timedelta(
            seconds=chance.choice([0, 0.4, 59.9, 3600, 1800.25]) + chance.randrange(0, 31 * 3600)
        )
        if chance.random() < 0.2:  # on an hour boundary exactly
            started = rollup.floor_hour(started)
        length = chance.choice([timedelta(microseconds=300_000), timedelta(seconds=1), timedelta(minutes=59)])
        length += timedelta(seconds=chance.randrange(0, 6 * 3600)) * chance.randrange(0, 2)
        running = chance.random() < 0.3
        attempt_row(
            started_at=started,
            ended_at=None if running else started + length,
            gpu=chance.choice([0, 1, 2, 8]),
            project=chance.choice(PROJECTS),
        )
    rollup.rebuild_hours(NOW - timedelta(hours=48), NOW - timedelta(hours=10))  # some rolled up, some not


@pytest.mark.parametrize("seed", range(6))
def test_the_sparkline_counts_every_hour_as_the_report_does(db, seed):
    generated_attempts(seed)
    starts = hours(NOW)
    for by, filters in (((), {}), (("project",), {}), (("project",), {"project": ("train",)})):
        query = ReportQuery(starts[0], starts[-1] + rollup.HOUR, by=by, granularity="hour", filters=filters)
        assert gpu_seconds(query, NOW, HOURS) == by_report(query, NOW), (seed, by, filters)


def test_a_running_attempt_holds_every_hour_up_to_now(db):
    attempt_row(started_at=NOW - timedelta(days=2), ended_at=None, gpu=4)
    series = gpus_in_use(NOW)[()]
    assert series == [4.0] * HOURS  # whole hours, and the current one up to now


def test_a_group_whose_only_attempt_ran_under_a_second_has_no_line_as_in_the_report(db):
    start = rollup.floor_hour(NOW) - timedelta(hours=3)
    attempt_row(
        started_at=start - timedelta(milliseconds=400), ended_at=start + timedelta(milliseconds=500), project="solo"
    )
    attempt_row(started_at=start, ended_at=start + timedelta(hours=2), project="train")
    starts = hours(NOW)
    query = ReportQuery(starts[0], starts[-1] + rollup.HOUR, by=("project",), granularity="hour")
    assert set(gpu_seconds(query, NOW, HOURS)) == set(by_report(query, NOW)) == {("train",)}
