"""The catalog's capacity is summed by the database (pools.services.capacity.pool_totals, platform_totals): the
same figures, node counts and GPU products as reading every node into Python (pools.services.capacity.capacity);
and summarized ahead of the request (pools.services.capacity_summary): the same figures again, read by key while
fresh, summed for the request once stale."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.timezone import localtime

from clusters.models import Node
from pools.models import CapacitySummary, NodeMembership, Pool
from pools.services import capacity_summary, membership
from pools.services.capacity import capacity, platform_totals, pool_totals
from pools.services.capacity_summary import Totals
from pools.tasks import summarize_capacity
from tests.factories import PoolFactory


def test_the_sums_equal_the_node_by_node_report(demo_world):
    pools = list(Pool.objects.prefetch_related("platforms").order_by("name"))
    report = capacity()
    ids = [pool.pk for pool in pools]
    totals = pool_totals(ids)
    per_platform, products = platform_totals(ids)
    assert any(totals[pool.pk].nodes for pool in pools)
    for pool in pools:
        entry = report.pools.get(pool.name)
        if entry is None:
            assert totals[pool.pk].nodes == 0
            continue
        assert totals[pool.pk].as_dict() == entry["figures"].as_dict()
        for platform in pool.platforms.all():
            expected = entry["platforms"].get(platform.name)
            assert (per_platform[platform.pk].as_dict() if platform.pk in per_platform else None) == (
                expected.as_dict() if expected else None
            )
            shown = {node.gpu_product for node in report.nodes if platform.name in node.pools.get(pool.name, ())}
            assert products.get(platform.pk, set()) == shown


# --- the summary the catalog and the dashboard read (pools.services.capacity_summary) ---------------------------


def figures_of(found: Totals, pools: list[Pool]) -> tuple:
    platforms = [p.pk for pool in pools for p in pool.platforms.all()]
    return (
        {pk: found.pools[pk].as_dict() for pk in (pool.pk for pool in pools)},
        {pk: found.platforms[pk].as_dict() for pk in platforms if pk in found.platforms},
        {pk: found.products.get(pk, set()) for pk in platforms},
    )


def test_a_summary_holds_the_same_figures_as_summing_now(demo_world):
    pools = list(Pool.objects.prefetch_related("platforms").order_by("name"))
    live = capacity_summary.totals([pool.pk for pool in pools])
    assert capacity_summary.refresh() == len(pools)
    assert CapacitySummary.objects.count() == len(pools)
    summarized = capacity_summary.totals([pool.pk for pool in pools])
    assert figures_of(summarized, pools) == figures_of(live, pools)
    assert any(figures.allocatable["nvidia.com/gpu"] for figures in summarized.platforms.values())
    assert live.as_of < summarized.as_of == CapacitySummary.objects.earliest("computed_at").computed_at


def test_a_fresh_summary_is_read_by_key_and_a_stale_one_is_summed_again(demo_world, settings):
    pools = list(Pool.objects.prefetch_related("platforms").order_by("name"))
    ids = [pool.pk for pool in pools]
    capacity_summary.refresh()
    before = capacity_summary.totals(ids)
    Node.objects.update(gpu_used=F("gpu_allocatable"))  # every GPU taken since the summary
    with CaptureQueriesContext(connection) as read:
        kept = capacity_summary.totals(ids)
    assert len(read) == 1 and figures_of(kept, pools) == figures_of(before, pools)
    settings.CAPACITY_SUMMARY_MAX_AGE = 0  # the job stopped: what is shown is summed for the request
    now = capacity_summary.totals(ids)
    assert all(figures.free["nvidia.com/gpu"] == 0 for figures in now.pools.values())
    assert figures_of(now, pools) != figures_of(before, pools) and now.as_of > before.as_of


def test_a_pool_created_after_the_summary_is_summed_now(demo_world):
    capacity_summary.refresh()
    existing = Pool.objects.first()
    newer = PoolFactory(backend=existing.backend)
    found = capacity_summary.totals([existing.pk, newer.pk])
    assert (
        found.pools[newer.pk].nodes == 0
        and found.pools[existing.pk].as_dict() == pool_totals([existing.pk])[existing.pk].as_dict()
    )


def test_the_catalog_and_the_dashboard_say_when_their_figures_were_summed(demo_world):
    capacity_summary.refresh()
    stamp = localtime(CapacitySummary.objects.earliest("computed_at").computed_at).strftime("%H:%M:%S")
    client = Client()
    client.force_login(demo_world.researcher)
    assert f"Free and total GPUs as of {stamp} UTC (machine pools too)." in client.get("/").content.decode()
    client.force_login(demo_world.admin)
    assert f"As of {stamp} UTC" in client.get("/admin/").content.decode()


def test_the_summary_is_a_periodic_job():
    entry = django_settings.CELERY_BEAT_SCHEDULE["capacity-summary"]
    assert entry["task"] == summarize_capacity.name and entry["schedule"] == django_settings.CAPACITY_SUMMARY_SECONDS


def test_nodes_that_change_pools_are_summed_live_until_the_next_summary(demo_world):
    pools = list(Pool.objects.prefetch_related("platforms").order_by("name"))
    ids = [pool.pk for pool in pools]
    capacity_summary.refresh()
    member = NodeMembership.objects.select_related("node").first()
    backend_id = member.node.backend_id
    Node.objects.filter(pk=member.node_id).update(labels={}, unschedulable=True)  # it no longer fits its platforms
    membership.recompute_nodes(backend_id)
    assert not CapacitySummary.objects.filter(pool__backend_id=backend_id).exists()
    assert CapacitySummary.objects.exclude(pool__backend_id=backend_id).exists()  # other backends' still hold
    found = capacity_summary.totals(ids)
    assert figures_of(found, pools) == figures_of(Totals(*_live(ids), found.as_of), pools)


def _live(ids):
    per_platform, products = platform_totals(ids)
    return pool_totals(ids), per_platform, products
