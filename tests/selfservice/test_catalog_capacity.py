"""The catalog's capacity is summed by the database (pools.services.capacity.pool_totals, platform_totals): the
same figures, node counts and GPU products as reading every node into Python (pools.services.capacity.capacity)."""

from __future__ import annotations

from pools.models import Pool
from pools.services.capacity import capacity, platform_totals, pool_totals


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
