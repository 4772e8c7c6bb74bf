"""The demo as `make dev` runs it: `seed_demo` with DEMO_CLUSTERS_URL points each demo backend at its own simulated
cluster (kubesim serving kubesim.fleet.DEMO_CLUSTERS under /clusters/<backend>), so each backend's inventory holds
only its own nodes and a workflow's pod goes to its pool's cluster, through the one client factory."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from clusters.inventory import sync_backend
from clusters.models import Backend, Node
from kubesim import EmulatorServer
from kubesim.__main__ import demo_machine_pools
from kubesim.fleet import DEMO_CLUSTERS, DEMO_MACHINE_POOL_CLUSTER, demo_cluster_fleet
from quotas.services import node_labels
from tests.devstack import HELLO
from tests.polling import wait_until
from workflows.models import Task
from workflows.services import SubmitRequest, submit


@pytest.fixture
def demo_clusters() -> Iterator[EmulatorServer]:
    kubelet = {"start_delay": 0.05, "run_seconds": 3600}
    clusters = {name: EmulatorServer(fleet=demo_cluster_fleet(name), kubelet=kubelet) for name in DEMO_CLUSTERS}
    rosa = clusters[DEMO_MACHINE_POOL_CLUSTER]
    rosa.enable_machine_pools(boot_seconds=0)
    demo_machine_pools(rosa)  # additional keeps 2 nodes, ml-training none
    with EmulatorServer(host="127.0.0.1", port=0, clusters=clusters) as server:
        wait_until(lambda: len(rosa.emulator.list("nodes")) == 2, what="the additional machine pool at its minimum")
        yield server
        for cluster in clusters.values():
            assert not cluster.emulator.internal_errors, list(cluster.emulator.internal_errors)


@pytest.fixture
def seeded(db, demo_clusters, monkeypatch) -> EmulatorServer:
    monkeypatch.setenv("DEMO_CLUSTERS_URL", demo_clusters.url)
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
    for backend in Backend.objects.all():
        sync_backend(backend.pk)  # what the watcher and the periodic full resync run
        node_labels.sync(backend)  # what follows the commit: the node-pool label confined pods select
    return demo_clusters


def inventory(backend: str) -> list[str]:
    return sorted(Node.objects.filter(backend__name=backend).values_list("name", flat=True))


def test_each_demo_backend_inventory_holds_only_its_own_nodes(seeded):
    assert sorted(Backend.objects.values_list("name", flat=True)) == sorted(DEMO_CLUSTERS)
    for name in DEMO_CLUSTERS:
        assert Backend.objects.get(name=name).api_url == f"{seeded.url}/clusters/{name}"
        if name != DEMO_MACHINE_POOL_CLUSTER:
            assert inventory(name) == sorted(n["metadata"]["name"] for n in demo_cluster_fleet(name)), name
    assert inventory("gpu-cluster-01")[:3] == ["a100-node-0", "a100-node-1", "a100-node-2"]
    assert inventory("graphics-cluster-01") == [
        *(f"l40-node-{i}" for i in range(3)),
        *(f"l40s-node-{i}" for i in range(4)),
    ]
    rosa = inventory(DEMO_MACHINE_POOL_CLUSTER)
    assert len(rosa) == 2 and all(name.startswith("additional-") for name in rosa)  # its machine pool's, no others
    everywhere = [name for backend in DEMO_CLUSTERS for name in inventory(backend)]
    assert len(everywhere) == len(set(everywhere)) == 9 + 7 + 9 + 3 + 2 + 2  # no node under two backends


def test_a_workflow_on_the_graphics_pool_gets_its_pod_on_the_graphics_cluster(
    seeded, django_capture_on_commit_callbacks
):
    researcher = get_user_model().objects.get(username="researcher")
    with django_capture_on_commit_callbacks(execute=True):  # the pod creation enqueued after commit (Celery eager)
        result = submit(SubmitRequest(pool="robotics-simulation", spec=HELLO.read_text(), who=researcher))
    task = Task.objects.get(workflow__workflow_id=result.workflow_id)
    graphics = seeded.clusters["graphics-cluster-01"].emulator
    pods = {name: [p["metadata"]["name"] for p in c.emulator.list("pods")] for name, c in seeded.clusters.items()}
    assert pods == {name: ([task.pod_name] if name == "graphics-cluster-01" else []) for name in DEMO_CLUSTERS}

    def node():
        return (graphics.get("pods", task.pod_name, task.namespace).get("spec") or {}).get("nodeName")

    wait_until(node, what="the pod bound to a node")
    assert node().startswith("l40-node-")  # the pool's default platform, l40-platform: the cluster's L40 nodes
