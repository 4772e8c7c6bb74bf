"""Inventory at the scale of the Kubernetes envelope: 5,000 nodes and 50,000 pods from the kubesim emulator.

* full sync over HTTP with the official client (paginated lists, 500 per page) into an empty inventory,
  with the inventory write time and the queries per 500-node batch; and a resync of an unchanged cluster;
* one watch event applied (a node label change with its membership, a pod bound to a node);
* placement of one pod over the 5,000 nodes (pure engine);
* membership recompute of 20 platforms x 5,000 nodes.

The emulator runs in this process (its own thread and event loop), so list times include serving.
"""

from __future__ import annotations

import gc
import statistics
import time

from bench.django_env import throwaway_database
from bench.harness import Row, measure

NODES, PODS, PLATFORMS = 5_000, 50_000, 20
MACHINE_POOLS = ("h100", "a100", "gb200", "l40s", "l40", "t4-spot", "jetson-thor", "cpu")


def _config(store, actor, url: str) -> None:
    store.apply("BACKEND", "bench", {"api_url": url, "namespace": "default"}, actor)
    templates = {
        "gpu": {"spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
    }
    templates.update(
        {f"mp-{name}": {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": name}}} for name in MACHINE_POOLS}
    )
    templates["zone-a"] = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
                                ]
                            }
                        ]
                    }
                }
            }
        }
    }
    store.apply_many("POD_TEMPLATE", templates, actor)
    pools = {}
    for i in range(PLATFORMS // 2):  # 10 pools x 2 platforms, overlapping machine pools (SHARED nodes)
        first, second = MACHINE_POOLS[i % 8], MACHINE_POOLS[(i + 3) % 8]
        pools[f"team-{i:02d}"] = {
            "backend": "bench",
            "common_pod_template": ["gpu"],
            "platforms": {
                first: {"override_pod_template": [f"mp-{first}"]},
                f"{second}-zone-a": {"override_pod_template": [f"mp-{second}", "zone-a"]},
            },
        }
    store.apply_many("POOL", pools, actor)


def run() -> list[Row]:
    from kubesim import EmulatorServer
    from kubesim.fleet import load_fleet, synthetic_fleet

    nodes, pods = synthetic_fleet(NODES, PODS)
    with EmulatorServer(port=0) as server, throwaway_database():
        load_fleet(server, nodes, pods)
        del nodes, pods
        gc.collect()
        gc.freeze()  # the emulator's 55,000 objects are not garbage; keep the collector off them
        return _run(server)


def _run(server) -> list[Row]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from clusters import inventory
    from clusters.models import Backend, Node
    from configs import store
    from configs.revisions import Actor
    from pools.engine.placement import place, prepare_pod
    from pools.models import NodeMembership, Platform
    from pools.services import membership

    _config(store, Actor(name="bench", source="cli"), server.url)
    backend = Backend.objects.get(name="bench")
    rows = []

    # -- full sync into an empty inventory (3 runs), with the write phase timed separately
    write_times, totals, write_queries, result = [], [], 0, None
    original = inventory.write_nodes

    def timed_write(*args, **kwargs):
        nonlocal write_queries
        start = time.perf_counter()
        with CaptureQueriesContext(connection) as ctx:
            out = original(*args, **kwargs)
        write_times.append(time.perf_counter() - start)
        write_queries = len(ctx)
        return out

    inventory.write_nodes = timed_write
    try:
        for _ in range(3):
            Node.objects.filter(backend=backend).delete()
            start = time.perf_counter()
            result = inventory.sync_backend(backend.pk)
            totals.append(time.perf_counter() - start)
    finally:
        inventory.write_nodes = original
    assert result.nodes == NODES and result.pods == PODS
    members = NodeMembership.objects.count()
    upserts = -(-NODES // inventory.BATCH_SIZE)
    rows.append(
        Row(
            f"inventory full sync: {NODES} nodes + {PODS} pods (HTTP, empty inventory)",
            statistics.median(totals),
            max(totals),
            3,
            target="<= 8 s",
            note=f"{result.pages} pages of 500",
        )
    )
    rows.append(
        Row(
            "  of which inventory write (upsert + membership)",
            statistics.median(write_times),
            max(write_times),
            3,
            note=f"{write_queries} queries: {upserts} upserts (1 per {inventory.BATCH_SIZE}-node page) "
            f"+ membership ({members} rows)",
        )
    )
    resync = measure(
        f"inventory resync, unchanged cluster ({NODES} nodes)",
        lambda: inventory.sync_backend(backend.pk),
        runs=3,
        warmup=0,
    )
    with CaptureQueriesContext(connection) as ctx:
        inventory.sync_backend(backend.pk)
    resync.note = f"{len(ctx)} queries, nothing rewritten"
    rows.append(resync)

    # -- one watch event
    index = inventory.PodIndex.build(_pods(server))
    gc.collect()
    gc.freeze()  # as `watch_cluster` does once its index is built: the long-lived heap is not rescanned
    raw_node = server.emulator.get("nodes", "h100-00007")
    flip = {"value": 0}

    def node_event():
        flip["value"] ^= 1
        raw_node["metadata"]["labels"]["bench/flip"] = str(flip["value"])
        inventory.apply_node_event(backend.pk, "MODIFIED", raw_node, index)

    label_event = measure(
        "watch event: node label change (+ its membership in 20 platforms)", node_event, runs=50, target="<= 3 ms"
    )
    with CaptureQueriesContext(connection) as ctx:
        node_event()
    label_event.note = f"{len(ctx)} round trips, BEGIN and COMMIT included; platforms, node pools cached"
    rows.append(label_event)
    rows.append(_fenced(backend.pk, raw_node, flip, index))
    pod = {
        "metadata": {"name": "bench-pod", "namespace": "team-00", "labels": {"pool-portal/workflow": "wf"}},
        "spec": {
            "nodeName": "h100-00007",
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}}
            ],
        },
        "status": {"phase": "Running"},
    }
    phases = ["Running", "Succeeded"]

    def pod_event():
        pod["status"]["phase"] = phases[0]
        phases.reverse()
        inventory.apply_pod_event(backend.pk, "MODIFIED", pod, index)

    rows.append(measure("watch event: pod bound / finished (node sums)", pod_event, runs=50, target="<= 5 ms"))

    # -- placement of one pod over every node (engine only)
    node_infos = [info for _, _, info in membership.node_infos(Node.objects.filter(backend=backend))]
    for info in node_infos:
        info.allocatable = {"cpu": 191_500, "memory": 2046 * 2**30, "nvidia.com/gpu": 8, "pods": 250}
    gpu_pod = {
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
        }
    }
    rows.append(
        measure(
            f"placement: one pod over {NODES} nodes (engine)",
            lambda: place(prepare_pod(gpu_pod), node_infos),
            runs=30,
            target="<= 20 ms, p99 <= 50 ms",
        )
    )

    # -- membership recompute of every platform over every node (parsed pods cached per config)
    ids = list(Platform.objects.values_list("pk", flat=True))
    assert len(ids) == PLATFORMS
    rows.append(
        measure(
            f"membership recompute: {PLATFORMS} platforms x {NODES} nodes",
            lambda: membership.recompute_platforms(ids),
            runs=5,
            warmup=1,
            target="<= 2 s",
            note=f"{NodeMembership.objects.count()} memberships",
        )
    )

    def from_scratch():
        NodeMembership.objects.all().delete()
        membership.recompute_platforms(ids)

    rows.append(measure("  same, from an empty membership table (all rows inserted)", from_scratch, runs=3, warmup=0))
    return rows


def _pods(server):
    from clusters.kube.node_pod_lists import pod_record

    return [pod_record(pod) for pod in server.emulator.list("pods")]


def _fenced(backend_id: int, raw_node: dict, flip: dict, index) -> Row:
    """The same node event as a watcher replica applies it: the lease's fence first in the event's own
    transaction (clusters.leases: one conditional UPDATE recording the event's resourceVersion)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from clusters import inventory
    from clusters.leases import Leases

    leases = Leases("watch_cluster", "bench", seconds=300, renew_seconds=100)
    leases.join()
    leases.ensure([backend_id])
    held = leases.acquire(backend_id)
    version = {"n": 0}

    def fenced_event():
        version["n"] += 1
        flip["value"] ^= 1
        raw_node["metadata"]["labels"]["bench/flip"] = str(flip["value"])
        fence = lambda: leases.fence(held, {"nodes": str(version["n"])})  # noqa: E731
        inventory.apply_node_event(backend_id, "MODIFIED", raw_node, index, fence=fence)

    row = measure("watch event: node label change, through the lease's fence", fenced_event, runs=50, target="<= 3 ms")
    with CaptureQueriesContext(connection) as ctx:
        fenced_event()
    row.note = f"{len(ctx)} round trips: the node event's, plus the fence's UPDATE"
    leases.leave([held])
    return row
