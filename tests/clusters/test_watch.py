"""The watcher (`watch_cluster`): events keep the inventory current; 410 relists; outages mark the backend.

Watch threads only read streams; `drain_until` (tests/polling.py) applies events in the test's thread, so the normal
transactional `db` fixture works. No sleeps: every wait is a deadline on an observable condition.
"""

from __future__ import annotations

import pytest

from clusters import inventory
from clusters.inventory_watch import ClusterWatcher
from clusters.models import Backend, Node
from pools.models import NodeMembership
from tests.clusters.conftest import H100_NODES, running_pod
from tests.logcapture import logger_lines
from tests.polling import PATIENCE, drain_until
from tests.queries import captured_queries


@pytest.fixture
def watcher(pools_config):
    watcher = ClusterWatcher(["sim"], watch_seconds=30, backoff_max=0.05)
    assert watcher.start() == ["backend sim: 29 nodes, 0 pods; watching"]
    yield watcher
    watcher.stop()


def node(name: str) -> Node:
    return Node.objects.get(backend__name="sim", name=name)


def members(platform: str) -> set[str]:
    return set(NodeMembership.objects.filter(platform__name=platform).values_list("node__name", flat=True))


def test_node_events_update_the_inventory_and_membership(watcher, kube_server):
    assert members("cpu") == {f"cpu-node-{i}" for i in range(4)}
    kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"hive.openshift.io/machine-pool": "x"}}})
    drain_until(watcher, lambda: "cpu-node-0" not in members("cpu"))
    assert node("cpu-node-0").labels["hive.openshift.io/machine-pool"] == "x"

    kube_server.emulator.patch("nodes", "h100-node-1", {"spec": {"unschedulable": True}})
    drain_until(watcher, lambda: node("h100-node-1").unschedulable)
    assert members("h100") == set(H100_NODES) - {"h100-node-1"}

    new = kube_server.emulator.get("nodes", "cpu-node-3")
    new["metadata"] = {"name": "cpu-node-9", "labels": new["metadata"]["labels"]}
    kube_server.emulator.create("nodes", new)
    drain_until(watcher, lambda: "cpu-node-9" in members("cpu"))

    kube_server.emulator.delete("nodes", "cpu-node-9")
    drain_until(watcher, lambda: not Node.objects.filter(name="cpu-node-9").exists())


def test_pod_events_update_the_summed_requests(watcher, kube_server):
    kube_server.emulator.load("pods", [running_pod("job", "h100-node-0", cpu="2", gpu=4, workload=True)])
    drain_until(watcher, lambda: node("h100-node-0").gpu_used == 4)
    assert node("h100-node-0").requested_workload == {"cpu": 2000, "memory": 2**30, "nvidia.com/gpu": 4}

    kube_server.emulator.patch(
        "pods", "job", {"status": {"phase": "Succeeded"}}, namespace="team-a", subresource="status"
    )
    drain_until(watcher, lambda: node("h100-node-0").gpu_used == 0)
    assert node("h100-node-0").workload_pods == 0

    kube_server.emulator.load("pods", [running_pod("other", "h100-node-2", cpu="500m")])
    drain_until(watcher, lambda: node("h100-node-2").cpu_used == 500)
    kube_server.emulator.delete("pods", "other", namespace="team-a")
    drain_until(watcher, lambda: node("h100-node-2").cpu_used == 0)


def test_a_pod_event_that_moves_no_sum_writes_nothing(backend):
    """Bound Pending → Running, or a status report: the same node, requests and count, so no transaction (each
    pod's start was one more fenced write of its node's row per pod)."""
    index = inventory.PodIndex()
    pending = running_pod("job", "h100-node-0", gpu=4, workload=True, phase="Pending")
    with captured_queries() as queries:
        assert inventory.apply_pod_event(backend.pk, "ADDED", pending, index) == {"h100-node-0"}
    assert any("UPDATE" in sql for sql in queries)

    running = running_pod("job", "h100-node-0", gpu=4, workload=True)
    running["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    with captured_queries() as queries:
        assert inventory.apply_pod_event(backend.pk, "MODIFIED", running, index) == set()
        assert inventory.apply_pod_event(backend.pk, "MODIFIED", running, index) == set()
    assert queries == []

    finished = running_pod("job", "h100-node-0", gpu=4, workload=True, phase="Succeeded")
    with captured_queries() as queries:
        assert inventory.apply_pod_event(backend.pk, "MODIFIED", finished, index) == {"h100-node-0"}
    assert any("UPDATE" in sql for sql in queries) and index.columns("h100-node-0")["gpu_used"] == 0


def test_a_410_gone_watch_relists(watcher, kube_server):
    kube_server.emulator.compact()  # history gone: resuming from any old version now answers 410
    kube_server.emulator.patch("nodes", "cpu-node-1", {"metadata": {"labels": {"after": "compaction"}}})
    kube_server.emulator.load("pods", [running_pod("late", "cpu-node-1", cpu="3")])
    kube_server.emulator.compact()
    kube_server.emulator.expire_watches()  # open watches get a 410 ERROR event and end

    drain_until(
        watcher, lambda: node("cpu-node-1").labels.get("after") == "compaction" and node("cpu-node-1").cpu_used == 3000
    )
    # and the new watches work from the relist's version
    kube_server.emulator.patch("nodes", "cpu-node-2", {"metadata": {"labels": {"after": "relist"}}})
    drain_until(watcher, lambda: node("cpu-node-2").labels.get("after") == "relist")


def test_an_outage_marks_the_backend_and_the_watch_recovers(watcher, kube_server):
    kube_server.emulator.fail_next("watch", "*", status=503, times=None)
    kube_server.emulator.close_watches()  # streams end; reconnecting now fails
    drain_until(watcher, lambda: Backend.objects.get(name="sim").sync_status == "degraded")
    assert "HTTP 503" in Backend.objects.get(name="sim").last_error
    assert Node.objects.filter(backend__name="sim").count() == 29  # nothing lost

    kube_server.emulator.clear_failures()
    kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"back": "online"}}})
    drain_until(watcher, lambda: node("cpu-node-0").labels.get("back") == "online", timeout=PATIENCE)
    drain_until(watcher, lambda: Backend.objects.get(name="sim").online)
    assert Backend.objects.get(name="sim").sync_status == "ok"


def test_a_template_change_recomputes_membership(watcher, kube_server):
    from configs import store
    from tests.clusters.conftest import CLI

    assert members("a100") == {"a100-node-0", "a100-node-1"}
    store.apply("POD_TEMPLATE", "a100", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}, CLI)
    assert members("a100") == {f"l40s-node-{i}" for i in range(4)}


def test_a_backend_that_cannot_connect_is_reported_not_fatal(pools_config, backend):
    Backend.objects.create(name="incluster", connection="in-cluster")
    watcher = ClusterWatcher(None, watch_seconds=30)
    try:
        lines = watcher.start()
    finally:
        watcher.stop()
    assert lines[0].startswith("not watched: backend incluster: not running inside a cluster")
    assert lines[1] == "backend sim: 29 nodes, 0 pods; watching"
    assert Backend.objects.get(name="incluster").sync_status == "degraded"


def test_an_event_that_fails_to_apply_is_logged_and_the_watch_goes_on(watcher, kube_server, request):
    """One bad event (here no object at all; in life a database hiccup) must not end `watch_cluster`."""
    logged = logger_lines(request, "clusters.watchloop")
    stream = watcher.backends[0].streams["nodes"]
    watcher.events.put(("event", stream, "MODIFIED", None))
    watcher.process()
    assert watcher.errors == 1 and any("ClusterWatcher: applying event failed" in line for line in logged)
    kube_server.emulator.patch("nodes", "cpu-node-1", {"spec": {"unschedulable": True}})
    drain_until(watcher, lambda: node("cpu-node-1").unschedulable)
