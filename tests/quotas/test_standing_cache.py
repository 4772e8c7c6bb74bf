"""The standings the pages show are served from per-process caches (the quota trees under the charging epoch,
quotas.services.state.cached_trees; what the engine derives from a node pool's state, memoised by that state in
quotas.services.standing), and they are always the ones admission enforces: after every write that moves them
(a quota through any door, in this process or another; a project's priority; over-quota switched off; workflows
starting and finishing) the cached standings equal the ones computed with no cache at all, as admission computes
them (inside a transaction, where every cache is off). A second read of an unchanged node pool reads no quota
row.

These tests run outside a wrapping transaction: inside one the caches are off.
"""

from __future__ import annotations

import copy

import pytest
from django.db import transaction

from clusters import inventory
from configs import store
from quotas.models import NodePool, NodePoolMember
from quotas.services import quotas
from quotas.services.standing import NodePoolStanding, standings
from quotas.services.state import cached_trees, states
from teams.services import update_project
from tests.access.test_access_cache import manage
from tests.queries import captured_queries
from tests.quotas.conftest import CLI, kube_server  # noqa: F401  (fixture)
from tests.quotas.test_pages import running
from workflows.models import WorkflowStatus

pytestmark = pytest.mark.django_db(transaction=True)
PROJECTS = ("vision", "speech", "infer")


@pytest.fixture
def world(carved, teams):
    quotas.set_quota(None, "h100", "department", "research", "gpu", deserved=16)
    for name in ("vision", "speech"):
        quotas.set_quota(None, "h100", "project", name, "gpu", deserved=8)
    running(teams["vision"], 4)
    running(teams["speech"], 12, preemptible=True)
    return teams


def figures(standing: NodePoolStanding) -> tuple:
    return (
        standing.managed,
        standing.over_quota,
        standing.capacity,
        standing.free,
        standing.queued_workflows,
        [(p.project, p.resources) for p in standing.projects],
    )


def shown(name: str = "h100") -> dict[str, tuple]:
    """project → its GPU figures as the pages read them (through the caches), checked against the standings
    computed afresh (the caches are off inside a transaction, as under admission's lock)."""
    node_pool = NodePool.objects.get(name=name)
    cached = standings([node_pool], PROJECTS)[node_pool.pk]
    with transaction.atomic():
        fresh = standings([node_pool], PROJECTS)[node_pool.pk]
    assert figures(cached) == figures(fresh)
    return {p.project: (p.gpu.deserved, p.gpu.limit, p.gpu.in_use, p.gpu.could_borrow) for p in cached.projects}


def test_an_unchanged_node_pool_is_read_again_without_its_quota_rows(world):
    first = shown()
    node_pool = NodePool.objects.get(name="h100")
    with captured_queries() as queries:
        again = standings([node_pool], PROJECTS)[node_pool.pk]
    assert {p.project: (p.gpu.deserved, p.gpu.limit, p.gpu.in_use, p.gpu.could_borrow) for p in again.projects} == first
    assert any("access_accessepoch" in sql for sql in queries)
    assert not any('"quotas_quota"' in sql for sql in queries), queries


def test_quota_changes_through_every_door_are_shown_at_once(world):
    assert shown()["vision"] == (8, None, 4, 12)
    quotas.set_quota(None, "h100", "project", "vision", "gpu", limit=10)  # the service (REST, grid)
    assert shown()["vision"] == (8, 10, 4, 2)
    document = store.show("NODE_POOL", "h100")  # the config store (YAML, admin)
    document["projects"]["vision"]["gpu"] = {"deserved": 6}
    store.apply("NODE_POOL", "h100", document, CLI)
    assert shown()["vision"][0] == 6
    manage("quota", "set", "vision", "h100", "--gpu", "5")  # the CLI, in another process
    assert shown()["vision"][0] == 5


def test_over_quota_switched_off_is_shown_at_once(world):
    assert shown()["vision"][3] == 12
    store.apply("NODE_POOL", "h100", {**store.show("NODE_POOL", "h100"), "over_quota": False}, CLI)
    assert shown()["vision"][3] == 0


def test_workflows_starting_and_finishing_are_shown_at_once(world, teams):
    assert shown()["vision"][2] == 4
    started = running(teams["vision"], 2)
    assert shown()["vision"][2] == 6
    running(teams["vision"], 8, status=WorkflowStatus.QUEUED)
    assert NodePool.objects.get(name="h100") and shown()["vision"][2] == 6  # queued: asked for, not in use
    started.status = WorkflowStatus.COMPLETED
    started.save(update_fields=["status"])
    assert shown()["vision"][2] == 4


def test_a_projects_new_priority_and_a_deleted_project_reach_the_cached_tree(world, teams):
    node_pool = NodePool.objects.get(name="h100")
    shown()
    update_project("speech", CLI, priority=7)
    trees, _, _ = cached_trees([node_pool])
    assert {p.name: p.priority for p in trees[node_pool.pk].projects}["speech"] == 7
    shown()
    teams["infer"].delete()
    trees, _, _ = cached_trees([node_pool])
    assert "infer" not in {p.name for p in trees[node_pool.pk].projects}
    shown()


# --- node pools' capacity, cached per process under the inventory and charging epochs (quotas.services.capacity) --


def capacity_shown(name: str = "h100") -> dict:
    """The node pool's capacity as the pages read it (cached), checked against summing the nodes now (inside a
    transaction, as admission does)."""
    node_pool = NodePool.objects.get(name=name)
    cached = states([node_pool], with_tasks=False)[node_pool.pk].capacity
    with transaction.atomic():
        fresh = states([node_pool], with_tasks=False)[node_pool.pk].capacity
    assert cached == fresh
    return cached


def test_a_node_pools_capacity_follows_every_node_change_at_once(world, kube_server):  # noqa: F811
    node_pool = NodePool.objects.get(name="h100")
    name = NodePoolMember.objects.filter(node_pool=node_pool).values_list("node__name", flat=True).first()
    raw = copy.deepcopy(kube_server.emulator.get("nodes", name))
    index = inventory.PodIndex()
    backend = node_pool.backend_id

    def event(kind: str = "MODIFIED") -> dict:
        inventory.apply_node_event(backend, kind, raw, index)
        return capacity_shown()

    start = capacity_shown()
    with captured_queries() as queries:  # read again, unchanged: from the cache
        assert states([node_pool], with_tasks=False)[node_pool.pk].capacity == start
    assert not any("quotas_nodepoolmember" in sql for sql in queries), queries
    gpus = int(raw["status"]["allocatable"]["nvidia.com/gpu"])
    raw["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus - 1)  # a GPU failed its health check
    assert event()["gpu"] == start["gpu"] - 1
    raw["spec"]["unschedulable"] = True  # cordoned
    assert event()["gpu"] == start["gpu"] - gpus
    raw["spec"]["unschedulable"] = False
    assert event()["gpu"] == start["gpu"] - 1
    ready = next(c for c in raw["status"]["conditions"] if c["type"] == "Ready")
    ready["status"] = "False"
    assert event()["gpu"] == start["gpu"] - gpus
    ready["status"] = "True"
    raw["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
    assert event() == start
    raw["metadata"]["name"] = "h100-new"  # a node joins
    assert event("ADDED")["gpu"] == start["gpu"] + gpus
    assert event("DELETED") == start  # and goes
    nothing = {"label": {"key": "nvidia.com/gpu.product", "value": "none-such"}}
    store.apply("NODE_POOL", "h100", {**store.show("NODE_POOL", "h100"), "selector": nothing}, CLI)
    assert capacity_shown()["gpu"] == 0  # its nodes went back to the Default
