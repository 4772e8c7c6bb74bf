"""The config generation (portal.generation) and the caches keyed by it: a watch event reads the backend's
platforms (pools) and node pools (quotas) from the cache while nothing they are read from was written, and
follows every kind of write to them: the config store, a bulk `update()` (no signal), another transaction,
a rolled-back one."""

from __future__ import annotations

import copy

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from clusters import inventory
from clusters.models import Node
from configs import store
from pools.engine.platform import PlatformConfig, compile_platform
from pools.models import NodeMembership, Platform, Pool
from portal import generation
from quotas.models import NodePool
from quotas.services import membership
from tests.quotas.conftest import CLI

FLIP = "example.com/read-by-nobody"


def current() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {generation.read_sql(connection.vendor)}")
        return cursor.fetchone()[0]


def test_every_write_to_an_enrolled_table_changes_the_generation_and_only_those(carved):
    seen = [current()]

    def changed() -> bool:
        value = current()
        fresh = value not in seen
        seen.append(value)
        return fresh

    platform = Platform.objects.first()
    Node.objects.filter(backend=carved).update(unschedulable=False)  # not enrolled: the inventory's own rows
    NodeMembership.objects.filter(platform=platform).update(pool=platform.pool)
    assert not changed()
    Platform.objects.filter(pk=platform.pk).update(name=platform.name)  # bulk, no signal, same value
    assert changed()
    Pool.objects.filter(pk=platform.pool_id).update(description="x")
    assert changed()
    NodePool.objects.filter(backend=carved).update(description="y")
    assert changed()
    store.apply("NODE_POOL", "flip", {"backend": "sim", "selector": {"label": {"key": FLIP, "value": "2"}}}, CLI)
    assert changed()
    NodePool.objects.filter(name="flip").delete()
    assert changed()
    with pytest.raises(RuntimeError), transaction.atomic():  # a rolled-back write: its value is never seen again
        Pool.objects.update(description="z")
        rolled_back = current()
        raise RuntimeError
    assert current() == seen[-1] != rolled_back
    Pool.objects.update(description="z")
    assert current() not in (*seen, rolled_back)


def _platform_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if "pools_platform" in q["sql"] or "quotas_nodepool" in q["sql"]]


@pytest.fixture
def node_event(carved, kube_server):
    raw = copy.deepcopy(kube_server.emulator.get("nodes", "cpu-node-1"))
    index = inventory.PodIndex()

    def apply(**labels):
        raw["metadata"]["labels"].update(labels)
        with CaptureQueriesContext(connection) as queries:
            inventory.apply_node_event(carved.pk, "MODIFIED", raw, index)
        return _platform_queries(queries)

    return apply


def node_pool_of(name: str) -> str:
    return membership.NodePoolMember.objects.get(node__name=name).node_pool.name


def platforms_of(name: str) -> set[tuple[str, str]]:
    return set(NodeMembership.objects.filter(node__name=name).values_list("pool__name", "platform__name"))


def test_a_node_pool_added_between_two_events_is_seen_by_the_second(node_event):
    node_event(**{FLIP: "1"})  # fills the caches
    assert node_event(**{FLIP: "0"}) == []  # nothing written since: no platform nor node pool read
    store.apply("NODE_POOL", "flip", {"backend": "sim", "selector": {"label": {"key": FLIP, "value": "2"}}}, CLI)
    assert node_pool_of("cpu-node-1") == "sim-default"
    assert node_event(**{FLIP: "2"})  # read again
    assert node_pool_of("cpu-node-1") == "flip"


def test_a_platform_changed_by_a_bulk_update_between_two_events_is_seen_by_the_second(node_event):
    node_event(**{FLIP: "1"})
    assert node_event(**{FLIP: "0"}) == []
    assert ("batch", "cpu") in platforms_of("cpu-node-1")
    # the batch/cpu platform's pod now also selects FLIP=2, written behind the config store's back
    platform = Platform.objects.get(pool__name="batch", name="cpu")
    config = PlatformConfig.from_json(platform.compiled["config"])
    config.templates.append(("flip", {"spec": {"nodeSelector": {FLIP: "2"}}}))
    Platform.objects.filter(pk=platform.pk).update(compiled=compile_platform(config).to_json())
    assert node_event(**{FLIP: "3"})  # read again: FLIP is now read by a platform, and 3 is not 2
    assert ("batch", "cpu") not in platforms_of("cpu-node-1")
    node_event(**{FLIP: "2"})
    assert ("batch", "cpu") in platforms_of("cpu-node-1")


def test_the_caches_are_bypassed_without_a_generation(node_event, carved):
    node_event(**{FLIP: "1"})
    assert membership._NODE_POOLS.get(carved.pk, None) is None
    assert membership._NODE_POOLS.get(carved.pk, current()) is not None
