"""The metrics' counters were computed from the daily rollups plus what retention had retired into SharedCount
rows; `usage.0002_usage_totals` seeds the cumulative totals with exactly those sums, so Prometheus sees no
reset, and folds the retired rows in (removing them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.migrations.migrating import leaves, migrate

BEFORE = ("usage", "0001_initial")

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_totals():
    latest = leaves()
    try:
        yield migrate([node for node in latest if node[0] != "usage"] + [BEFORE]), latest
    finally:
        migrate(latest)


def test_the_totals_start_where_the_counters_were(before_totals):
    apps, latest = before_totals
    Rollup, Shared = apps.get_model("usage", "UsageRollup"), apps.get_model("portal", "SharedCount")
    day = datetime(2026, 11, 1, tzinfo=UTC)
    for granularity, gpu in (("day", 7200), ("hour", 3600), ("hour", 3600)):  # the hours are in the day already
        Rollup.objects.create(
            granularity=granularity, period_start=day, project="train", node_pool="a100", gpu_seconds=gpu,
            cost_micros=gpu * 10,
        )  # fmt: skip
    labels = json.dumps({"node_pool": "a100", "project": "train"}, sort_keys=True)
    Shared.objects.create(name="portal_usage_retired_gpu_seconds", labels=labels, value=100)
    Shared.objects.create(name="portal_usage_retired_cost_micros", labels=labels, value=5)
    old = json.dumps({"node_pool": "h100", "project": "gone"}, sort_keys=True)  # pruned long ago, no rollup left
    Shared.objects.create(name="portal_usage_retired_gpu_seconds", labels=old, value=42)
    Shared.objects.create(name="portal_pod_creations", labels="{}", value=3)  # not the usage record's

    apps = migrate(latest)
    totals = apps.get_model("usage", "UsageTotal").objects.values_list(
        "project", "node_pool", "gpu_seconds", "cost_micros"
    )
    assert sorted(totals) == [("gone", "h100", 42, 0), ("train", "a100", 7300, 72005)]
    names = apps.get_model("portal", "SharedCount").objects.values_list("name", flat=True)
    assert list(names) == ["portal_pod_creations"]
