"""Node pools: every backend's Default, which node pool each node is in (label, then platform, then the
Default; one each), kept current when nodes, platforms and node pools change; capacity; charging."""

from __future__ import annotations

import copy

import pytest

from clusters import inventory
from clusters.models import Backend, Node
from configs import revisions, store
from configs.errors import ConfigError, ConfigInUse
from pools.models import Pool
from quotas.models import NodePool, NodePoolMember
from quotas.services import capacity, membership, node_pools
from tests.factories import BackendFactory, NodeFactory, QuotaFactory
from tests.queries import assert_constant_queries
from tests.quotas.conftest import A100_MEMBERS, A100_PLATFORM, CLI, FLEET_SIZE, H100_LABEL, H100_NODES, H100_PRODUCT


def members(name: str) -> set[str]:
    return set(membership.members_of(NodePool.objects.get(name=name)))


def test_every_backend_has_its_default_from_creation_with_a_revision(db):
    store.apply("BACKEND", "east", {"description": "east"}, CLI)
    factory_made = BackendFactory(name="west")
    for name in ("east", "west"):
        default = node_pools.default_node_pool(Backend.objects.get(name=name))
        assert (default.name, default.selector_kind, default.is_default) == (f"{name}-default", "default", True)
    assert store.show("NODE_POOL", "east-default") == {
        "backend": "east",
        "selector": {},
        "over_quota": True,
        "admission_seconds": None,
        "min_runtime_seconds": None,
        "time_based_fair_share": None,
        "description": "",
        "departments": {},
        "projects": {},
    }
    assert revisions.latest_snapshot("NODE_POOL", "west-default")["backend"] == factory_made.name


def test_label_then_platform_then_default_one_node_pool_each(carved):
    assert members("h100") == set(H100_NODES)
    assert members("a100") == set(A100_MEMBERS)  # a100-node-2 is cordoned: not a member of train/a100
    default = members("sim-default")
    assert len(default) == FLEET_SIZE - len(H100_NODES) - len(A100_MEMBERS) and "a100-node-2" in default
    assert NodePoolMember.objects.count() == Node.objects.count() == FLEET_SIZE  # no node twice


def test_a_selector_over_nodes_another_node_pool_holds_is_refused_naming_it(carved):
    # a platform node pool over research/any-h100 (the h100 nodes): the label node pool h100 holds them
    platform = {"platform": {"pool": "research", "platform": "any-h100"}}
    with pytest.raises(ConfigError) as refused:
        store.apply("NODE_POOL", "any-h100", {"backend": "sim", "selector": platform}, CLI)
    assert (refused.value.field, refused.value.value) == ("selector", platform)
    assert "matches 4 node(s) node pool h100 already holds (e.g. h100-node-0)" in refused.value.reason
    assert not NodePool.objects.filter(name="any-h100").exists()
    store.delete("NODE_POOL", "h100", CLI)  # once h100 is gone, its nodes may be selected again
    store.apply("NODE_POOL", "any-h100", {"backend": "sim", "selector": platform}, CLI)
    assert members("any-h100") == set(H100_NODES)
    assert not members("sim-default") & set(H100_NODES)


def test_node_label_changes_move_a_node(carved, kube_server):
    kube_server.emulator.patch(
        "nodes", "cpu-node-0", {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}
    )
    inventory.sync_backend(carved.pk)
    assert "cpu-node-0" in members("h100")


def test_platform_membership_changes_move_nodes(carved):
    # train/a100 now selects the cpu nodes: the a100 node pool follows the platform
    store.apply("POD_TEMPLATE", "a100", {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}}, CLI)
    assert members("a100") == {f"cpu-node-{i}" for i in range(4)}
    assert set(A100_MEMBERS) <= members("sim-default")
    # the platform removed from its pool: its nodes go back to the Default
    body = store.show("POOL", "train")
    del body["platforms"]["a100"]
    store.apply("POOL", "train", body, CLI)
    assert members("a100") == set()
    assert NodePoolMember.objects.count() == FLEET_SIZE


def test_a_node_pool_selector_change_moves_nodes(carved):
    store.apply(
        "NODE_POOL",
        "h100",
        {"backend": "sim", "selector": {"label": {"key": "hive.openshift.io/machine-pool", "value": "cpu"}}},
        CLI,
    )
    assert members("h100") == {f"cpu-node-{i}" for i in range(4)}
    assert set(H100_NODES) <= members("sim-default")


def test_the_default_cannot_be_deleted_or_reselected_and_goes_with_its_backend(carved):
    with pytest.raises(ConfigInUse) as refused:
        store.delete("NODE_POOL", "sim-default", CLI)
    assert "goes only with the backend" in refused.value.reason
    with pytest.raises(ConfigError) as reselected:
        store.apply("NODE_POOL", "sim-default", {"backend": "sim", "selector": H100_LABEL}, CLI)
    assert reselected.value.field == "selector" and "Default node pool of backend sim" in reselected.value.reason
    with pytest.raises(ConfigError) as unselected:
        store.apply("NODE_POOL", "anything", {"backend": "sim", "selector": {}}, CLI)
    assert unselected.value.field == "selector"
    assert store.show("NODE_POOL", "sim-default")["selector"] == {}
    # another node pool keeps the backend from being deleted; once it is gone, the Default goes with it
    store.delete("POOL", "train", CLI)
    store.delete("POOL", "research", CLI)
    store.delete("POOL", "batch", CLI)
    with pytest.raises(ConfigInUse) as kept:
        store.delete("BACKEND", "sim", CLI)
    assert "node pool" in kept.value.reason and "a100" in kept.value.reason
    store.delete("NODE_POOL", "h100", CLI)
    store.delete("NODE_POOL", "a100", CLI)
    store.delete("BACKEND", "sim", CLI)
    assert not NodePool.objects.exists()
    gone = revisions.get_revision("NODE_POOL", "sim-default", 2)
    assert gone.deleted and gone.description == "its backend was deleted"


def test_capacity_counts_ready_schedulable_members(carved):
    h100 = NodePool.objects.get(name="h100")
    figures = capacity.capacity(h100)
    node = Node.objects.get(name="h100-node-0")
    assert figures["gpu"] == 4 * 8 and figures["nodes"] == 4
    assert figures["cpu"] == 4 * node.cpu_allocatable and figures["memory"] == 4 * node.memory_allocatable
    Node.objects.filter(name="h100-node-0").update(ready=False)
    Node.objects.filter(name="h100-node-1").update(unschedulable=True)
    assert capacity.capacity(h100)["gpu"] == 2 * 8
    default = NodePool.objects.get(name="sim-default")
    in_default = Node.objects.filter(node_pool_member__node_pool=default)
    assert Node.objects.get(name="a100-node-2").gpu_allocatable == 8  # cordoned, in the Default: not counted
    assert capacity.capacity(default)["gpu"] == sum(n.gpu_allocatable for n in in_default if n.schedulable)


def test_capacities_take_one_query_whatever_the_number_of_node_pools(carved):
    backend = Backend.objects.get(name="sim")

    def grow():
        for index in range(5):
            node = NodeFactory(backend=backend, name=f"extra-{index}", gpu_allocatable=2, labels={"team": f"t{index}"})
            store.apply(
                "NODE_POOL",
                f"extra-{index}",
                {"backend": "sim", "selector": {"label": {"key": "team", "value": f"t{index}"}}},
                CLI,
            )
            assert members(f"extra-{index}") == {node.name}

    assert_constant_queries(lambda: capacity.capacities(NodePool.objects.all()), grow, at_most=2)
    assert (
        capacity.capacities(NodePool.objects.filter(name="extra-0"))[NodePool.objects.get(name="extra-0").pk]["gpu"]
        == 2
    )


def test_charging_a_platform_pool_then_most_nodes_then_default(carved):
    train, research, batch = (Pool.objects.get(name=n) for n in ("train", "research", "batch"))
    assert node_pools_charged(train, "a100") == "a100"  # the platform node pool naming it
    assert node_pools_charged(train, "h100") == "h100"  # no platform node pool: most of its nodes
    assert node_pools_charged(research, "any-h100") == "h100"
    assert node_pools_charged(batch, "cpu") == "sim-default"
    assert node_pools_charged(batch, "no-such-platform") == "sim-default"


def node_pools_charged(pool, platform) -> str:
    return node_pools.charged_node_pool(pool, platform).name


def test_node_selector_and_managed(carved, teams):
    h100, a100 = NodePool.objects.get(name="h100"), NodePool.objects.get(name="a100")
    assert node_pools.node_selector(h100) == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert node_pools.node_selector(a100) == {"pool-portal/node-pool": "a100"}  # the label the portal keeps
    default = NodePool.objects.get(name="sim-default")
    assert node_pools.node_selector(default) == {"pool-portal/node-pool": "sim-default"}
    assert not node_pools.is_managed(h100)  # zero rows only: today's behaviour, admitted at once
    QuotaFactory(node_pool=h100, project=teams["infer"], resource="cpu", limit=4000)
    assert node_pools.is_managed(h100) and not node_pools.is_managed(a100)
    assert node_pools.managed_ids(NodePool.objects.all()) == {h100.pk}


def test_a_platform_selector_must_name_a_platform_of_the_same_backend(carved):
    store.apply("BACKEND", "other", {"description": "other"}, CLI)
    store.apply("POOL", "elsewhere", {"backend": "other", "platforms": {"p": {}}}, CLI)
    cases = [
        (
            {"platform": {"pool": "elsewhere", "platform": "p"}},
            "selector.platform.pool",
            "runs on backend other, not on this node pool's backend sim",
        ),
        ({"platform": {"pool": "nope", "platform": "p"}}, "selector.platform.pool", "unknown pool"),
        (
            {"platform": {"pool": "train", "platform": "b200"}},
            "selector.platform.platform",
            "is not a platform of pool train (platforms: a100, h100)",
        ),
        ({"label": {"key": "", "value": "x"}}, "selector.label.key", "is required"),
        (
            {"label": {"key": "a", "value": "b"}, "platform": {"pool": "train", "platform": "a100"}},
            "selector",
            "not both",
        ),
    ]
    for selector, field, reason in cases:
        with pytest.raises(ConfigError) as refused:
            store.apply("NODE_POOL", "bad", {"backend": "sim", "selector": selector}, CLI)
        assert (refused.value.field, reason in refused.value.reason) == (field, True), refused.value
    assert not NodePool.objects.filter(name="bad").exists()
    with pytest.raises(ConfigError) as moved:
        store.apply("NODE_POOL", "h100", {"backend": "other", "selector": H100_LABEL}, CLI)
    assert moved.value.field == "backend" and "stays on its backend (sim)" in moved.value.reason
    with pytest.raises(ConfigError) as reserved:
        store.apply("NODE_POOL", "other-x-default", {"backend": "other", "selector": A100_PLATFORM}, CLI)
    assert reserved.value.field == "name"


def test_watch_events_recompute_a_node_only_when_a_label_read_by_a_pool_changes(carved, kube_server):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from pools.models import NodeMembership

    def platforms(name):
        return set(NodeMembership.objects.filter(node__name=name).values_list("pool__name", "platform__name"))

    index = inventory.PodIndex()
    raw = copy.deepcopy(kube_server.emulator.get("nodes", "cpu-node-1"))
    before = (platforms("cpu-node-1"), members("sim-default"))
    raw["metadata"]["labels"]["example.com/read-by-nobody"] = "1"
    with CaptureQueriesContext(connection) as unread:
        inventory.apply_node_event(carved.pk, "MODIFIED", raw, index)
    assert (platforms("cpu-node-1"), members("sim-default")) == before
    raw["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"  # read by train/a100
    with CaptureQueriesContext(connection) as read:
        inventory.apply_node_event(carved.pk, "MODIFIED", raw, index)
    assert ("train", "a100") in platforms("cpu-node-1") and "cpu-node-1" in members("a100")
    assert len(unread) < len(read)
    raw["metadata"]["labels"]["nvidia.com/gpu.product"] = H100_PRODUCT  # and by the h100 label node pool
    inventory.apply_node_event(carved.pk, "MODIFIED", raw, index)
    assert "cpu-node-1" in members("h100") and ("train", "a100") not in platforms("cpu-node-1")
    # what a full recompute decides is what the events left
    kept = set(NodePoolMember.objects.values_list("node__name", "node_pool__name"))
    membership.recompute(carved.pk)
    assert set(NodePoolMember.objects.values_list("node__name", "node_pool__name")) == kept
