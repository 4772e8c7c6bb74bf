"""Machine pools meet disruptions (kubesim.autoscaler): a pool's label and taint changes reach its existing nodes
(ROSA in place; Karpenter by replacing drifted nodes), and a scale-down (ROSA's replicas lowered, Karpenter's
consolidation of an underutilized node) and a spot drain, on both providers, go through the Eviction API, waiting
for a node a PodDisruptionBudget holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from kubesim import EmulatorServer

from .conftest import kube_api_client, wait_until
from .test_machine_pools import (
    CLUSTER,
    FAST,
    GPU_TAINTS,
    MACHINEPOOL,
    gpu_pod,
    gpu_spot_pool,
    ocm_pool,
    pool_nodes,
    put,
)

NS = "default"


@pytest.fixture
def cloud(request) -> Iterator[EmulatorServer]:
    """A test may change the autoscaler's options: ``@pytest.mark.parametrize("cloud", [{...}], indirect=True)``."""
    options = {**FAST, "scale_down_seconds": 0.3, "drain_retry_seconds": 0.1, **getattr(request, "param", {})}
    with EmulatorServer(kubelet={"start_delay": 0.01}, machine_pools=options) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def api(cloud) -> Iterator[client.ApiClient]:
    with kube_api_client(cloud.url) as api_client:
        yield api_client


@pytest.fixture
def v1(api) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def pod_on(v1, name: str, node: str, labels: dict | None = None, tolerations: list | None = None) -> None:
    spec = {
        "containers": [{"name": "main", "image": "busybox"}],
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": tolerations or [],
    }
    metadata = {"name": name, "labels": labels or {}, "annotations": {"kubesim/never-finish": "true"}}
    v1.create_namespaced_pod(NS, {"metadata": metadata, "spec": spec})
    wait_until(lambda: v1.read_namespaced_pod(name, NS).status.phase == "Running", what=f"{name} running")


def nodepool(api, name: str, labels: dict, requirements: list[dict], taints: list | None = None) -> None:
    """A Karpenter NodePool (karpenter.sh/v1) created through the API, as the portal's Karpenter backend does."""
    body = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {"requirements": requirements, "taints": taints or []},
            }
        },
    }
    client.CustomObjectsApi(api).create_cluster_custom_object("karpenter.sh", "v1", "nodepools", body)


def instance_types(*names: str) -> dict:
    return {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(names)}


def cpu_pod(v1, name: str, cpu: str, labels: dict | None = None) -> str:
    """A pod that asks for ``cpu`` and goes wherever the scheduler puts it; the node it runs on."""
    spec = {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    metadata = {"name": name, "labels": labels or {}, "annotations": {"kubesim/never-finish": "true"}}
    v1.create_namespaced_pod(NS, {"metadata": metadata, "spec": spec})
    pod = wait_until(lambda: (p := v1.read_namespaced_pod(name, NS)).status.phase == "Running" and p)
    return pod.spec.node_name


def hold(api, *apps: str) -> None:
    """A PodDisruptionBudget per app that lets none of its one pod go (minAvailable 1), its status written."""
    policy = client.PolicyV1Api(api)
    for app in apps:
        body = {"metadata": {"name": app}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}
        policy.create_namespaced_pod_disruption_budget(NS, body)
    for app in apps:
        wait_until(lambda app=app: policy.read_namespaced_pod_disruption_budget(app, NS).status.expected_pods == 1)


def patch_pool(server: EmulatorServer, pool_id: str, **fields) -> None:
    server.call(lambda: server.emulator.ocm_machine_pools[CLUSTER][pool_id].update(fields))


def taints_of(node: client.V1Node) -> list[tuple]:
    return [(t.key, t.value, t.effect) for t in node.spec.taints or ()]


def test_rosa_applies_a_pools_new_labels_and_taints_to_its_existing_nodes(cloud, v1):
    put(
        cloud,
        ocm_pool(
            "additional",
            replicas=1,
            labels={"workload-type": "batch", "team": "data"},
            taints=[{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}],
        ),
    )
    (node,) = wait_until(lambda: pool_nodes(v1, "additional"))
    name = node.metadata.name
    batch = [{"key": "workload-type", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]
    pod_on(v1, "batch-job", name, tolerations=batch)
    v1.patch_node(name, {"metadata": {"labels": {"own": "mine"}}})  # a label the pool did not give stays

    patch_pool(
        cloud,
        "additional",
        labels={"workload-type": "batch", "tier": "gold"},
        taints=[
            {"key": "workload-type", "value": "batch", "effect": "NoSchedule"},
            {"key": "maintenance", "value": "true", "effect": "NoExecute"},
        ],
    )

    changed = wait_until(lambda: (n := v1.read_node(name)).metadata.labels.get("tier") == "gold" and n)
    labels = changed.metadata.labels
    assert "team" not in labels and labels["own"] == "mine" and labels[MACHINEPOOL] == "additional"
    assert taints_of(changed) == [("workload-type", "batch", "NoSchedule"), ("maintenance", "true", "NoExecute")]
    # the same node, not a new one; and the new NoExecute taint evicts the pod that does not tolerate it
    assert [n.metadata.name for n in pool_nodes(v1, "additional")] == [name]
    wait_until(lambda: not v1.list_namespaced_pod(NS).items, what="the batch job evicted by the NoExecute taint")


def test_karpenter_replaces_nodes_that_drifted_from_their_nodepool(cloud, api, v1):
    custom = client.CustomObjectsApi(api)
    nodepool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "batch"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "data"}},
                "spec": {
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]}
                    ]
                },
            }
        },
    }
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool)
    v1.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": "work", "annotations": {"kubesim/never-finish": "true"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], "nodeSelector": {"team": "data"}},
        },
    )
    (first,) = wait_until(lambda: pool_nodes(v1, "batch", "karpenter.sh/nodepool"))
    wait_until(lambda: v1.read_namespaced_pod("work", NS).status.phase == "Running")

    patch = {"spec": {"template": {"metadata": {"labels": {"team": "ml"}}}}}
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", "batch", patch)

    wait_until(
        lambda: first.metadata.name not in [n.metadata.name for n in v1.list_node().items], what="drifted node gone"
    )
    assert not v1.list_namespaced_pod(NS).items  # drained with it
    v1.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": "more", "annotations": {"kubesim/never-finish": "true"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], "nodeSelector": {"team": "ml"}},
        },
    )
    (replacement,) = wait_until(lambda: pool_nodes(v1, "batch", "karpenter.sh/nodepool"))
    assert replacement.metadata.labels["team"] == "ml"


def test_a_scale_down_waits_for_a_node_whose_budget_keeps_its_pod(cloud, api, v1):
    put(cloud, ocm_pool("additional", replicas=2))
    nodes = wait_until(lambda: (found := pool_nodes(v1, "additional")) and len(found) == 2 and found)
    held, other = sorted(n.metadata.name for n in nodes)
    pod_on(v1, "db", held, labels={"app": "db"})
    pod_on(v1, "web", other, labels={"app": "web"})
    policy = client.PolicyV1Api(api)
    for app in ("db", "web"):
        body = {"metadata": {"name": app}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}
        policy.create_namespaced_pod_disruption_budget(NS, body)

    patch_pool(cloud, "additional", replicas=1)

    # neither node can be drained: after a pass of the autoscaler (run here, on its loop) both stay
    cloud.call(cloud.machine_pools.sync)
    assert sorted(n.metadata.name for n in pool_nodes(v1, "additional")) == [held, other]
    policy.delete_namespaced_pod_disruption_budget("web", NS)  # now the web node may go: it does, not db's
    wait_until(lambda: [n.metadata.name for n in pool_nodes(v1, "additional")] == [held], what="web's node gone")
    assert [p.metadata.name for p in v1.list_namespaced_pod(NS).items] == ["db"]


@pytest.mark.parametrize("cloud", [{"scale_down_seconds": 0.0}], indirect=True, ids=["consolidate-after-0s"])
def test_karpenter_consolidation_waits_for_a_node_whose_budget_keeps_its_pod(cloud, api, v1):
    # consolidationPolicy left to its default, WhenEmptyOrUnderutilized; m5.xlarge nodes (4 CPUs)
    nodepool(api, "batch", {"team": "data"}, [instance_types("m5.xlarge")])
    held = cpu_pod(v1, "db", "1", {"app": "db"})
    assert cpu_pod(v1, "filler", "2500m") == held  # room left on db's node: no second node
    other = cpu_pod(v1, "web", "1", {"app": "web"})  # 0.5 CPU left there: Karpenter launches a second node
    assert other != held
    hold(api, "db", "web")
    v1.delete_namespaced_pod("filler", NS)
    wait_until(lambda: [p.metadata.name for p in v1.list_namespaced_pod(NS).items] == ["db", "web"])

    # now either node's pod fits on the other, but neither may be evicted: after a pass both stay
    cloud.call(cloud.machine_pools.sync)
    assert sorted(n.metadata.name for n in pool_nodes(v1, "batch", "karpenter.sh/nodepool")) == sorted([held, other])
    client.PolicyV1Api(api).delete_namespaced_pod_disruption_budget("web", NS)  # web's node may go: it does
    wait_until(
        lambda: [n.metadata.name for n in pool_nodes(v1, "batch", "karpenter.sh/nodepool")] == [held],
        what="web's node consolidated",
    )
    assert [p.metadata.name for p in v1.list_namespaced_pod(NS).items] == ["db"]


@pytest.mark.parametrize("provider", ["rosa", "karpenter"])
def test_a_spot_drain_asks_again_until_the_budget_lets_the_pod_go(cloud, api, v1, provider):
    if provider == "rosa":
        put(cloud, gpu_spot_pool(low=1, high=1))
    else:  # the same pool as a NodePool: spot g4dn.xlarge, labelled and tainted alike; a node when the pod waits
        spot = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
        labels = {MACHINEPOOL: "ml-training"}
        nodepool(api, "ml-training", labels, [instance_types("g4dn.xlarge"), spot], GPU_TAINTS)
    gpu_pod(v1, "train", {"kubesim/never-finish": "true"})
    wait_until(lambda: v1.read_namespaced_pod("train", NS).status.phase == "Running")
    v1.patch_namespaced_pod("train", NS, {"metadata": {"labels": {"app": "train"}}})
    policy = client.PolicyV1Api(api)
    body = {"metadata": {"name": "train"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "train"}}}}
    policy.create_namespaced_pod_disruption_budget(NS, body)
    node = v1.read_namespaced_pod("train", NS).spec.node_name

    cloud.interrupt_spot(node, notice_seconds=3600)
    cloud.call(lambda: None)  # the loop has run the first drain (queued before this)
    assert v1.read_namespaced_pod("train", NS).status.phase == "Running"  # refused: the budget keeps it

    policy.delete_namespaced_pod_disruption_budget("train", NS)
    wait_until(lambda: not v1.list_namespaced_pod(NS).items, what="evicted when the drain asked again")
    assert v1.read_node(node).metadata.name == node  # long before the notice is over
