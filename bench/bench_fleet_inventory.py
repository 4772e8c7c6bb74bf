"""Inventory of a fleet (issue #36): 20 simulated clusters of 2,500 nodes and 25,000 pods each (50,000 nodes,
500,000 pods), 100 pools of 3 platforms (300), served over HTTP by four kubesim processes (bench.kubesim_fleet).

* restart: `manage.py watch_cluster` and `watch_workflows` started as processes side by side, one replica each, as
  after a portal restart, until the inventory's watcher has listed every backend and watches them all (target:
  ≤ 60 s in total); into an empty inventory first, then again into a full one;
* one node event (a label change with its membership) applied with 50,000 nodes in the inventory (≤ 3 ms p99);
* the memory of one watcher holding 2,500 nodes and 25,000 pods (its RSS once watching, against a watcher of an
  empty cluster).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from bench.django_env import throwaway_database
from bench.harness import Row, measure

# smaller for a quick try: BENCH_FLEET_INVENTORY=BACKENDS,NODES,PODS (e.g. 4,200,2000)
BACKENDS, NODES, PODS = (int(n) for n in os.environ.get("BENCH_FLEET_INVENTORY", "20,2500,25000").split(","))
SERVERS = min(4, BACKENDS)  # kubesim processes, BACKENDS / SERVERS clusters each
POOLS_PER_BACKEND, PLATFORMS_PER_POOL = 5, 3
MACHINE_POOLS = ("h100", "a100", "gb200", "l40s", "l40", "t4-spot", "jetson-thor", "cpu")
ROOT = Path(__file__).resolve().parent.parent


def _serve(stack: ExitStack, first: int, count: int, nodes: int, pods: int, prefix: str = "fleet") -> Callable:
    """Start a kubesim process serving `count` clusters; the returned call waits for it and answers its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.kubesim_fleet", prefix, str(first), str(count), str(nodes), str(pods)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    stack.callback(process.wait, 30)
    stack.callback(process.stdin.close)

    def url() -> str:
        said = process.stdout.readline().strip()
        if not said.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"kubesim fleet server did not start (said {said!r})")
        return said

    return url


def _configure(urls: dict[str, str]) -> None:
    from configs import store
    from configs.revisions import Actor

    actor = Actor(name="bench", source="cli")
    store.apply_many("BACKEND", {name: {"api_url": url, "namespace": "default"} for name, url in urls.items()}, actor)
    store.apply_many(
        "POD_TEMPLATE",
        {f"mp-{pool}": {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": pool}}} for pool in MACHINE_POOLS},
        actor,
    )
    pools = {}
    for b, backend in enumerate(urls):
        for p in range(POOLS_PER_BACKEND):
            platforms = {}
            for k in range(PLATFORMS_PER_POOL):
                machine_pool = MACHINE_POOLS[(b + p + 3 * k) % len(MACHINE_POOLS)]
                platforms[f"{machine_pool}-{k}"] = {"override_pod_template": [f"mp-{machine_pool}"]}
            pools[f"{backend}-team{p}"] = {"backend": backend, "platforms": platforms}
    store.apply_many("POOL", pools, actor)


def _start(database: str, *argv: str) -> subprocess.Popen:
    env = {**os.environ, "DEBUG": "true", "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}"}
    command = [sys.executable, "manage.py", *argv]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        process.terminate()  # a replica frees its leases as it stops
    for process in processes:
        process.wait(30)


def _until_watching(process: subprocess.Popen, backends: int) -> None:
    """Read the watcher's lines until it has said `; watching` of `backends` backends (its start-up sync done)."""
    watching = 0
    while watching < backends:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"{' '.join(process.args[2:4])} ended before watching {backends} backends")
        watching += line.rstrip().endswith("; watching")


def _restart(names: list[str], database: str) -> float:
    """The portal's watchers started side by side, one replica each, as after a restart: the seconds until the
    inventory's watcher has synced and watches every backend."""
    start = time.perf_counter()
    cluster = _start(database, "watch_cluster", "--replica", "bench", *names)
    workflows = _start(database, "watch_workflows", "--replica", "bench", *names)
    try:
        _until_watching(cluster, len(names))
        return time.perf_counter() - start
    finally:
        _stop(cluster, workflows)


def _say(what: str, seconds: float) -> float:
    print(f"  {what}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds


def _rss_once_watching(name: str, database: str) -> tuple[float, int]:
    """(seconds until it watches, resident memory in bytes then) of a `watch_cluster` process of one backend."""
    start = time.perf_counter()
    process = _start(database, "watch_cluster", "--replica", "bench-one", name)
    try:
        _until_watching(process, 1)
        took = time.perf_counter() - start
        status = Path(f"/proc/{process.pid}/status").read_text()
        rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) * 1024
        return took, rss
    finally:
        _stop(process)


def run() -> list[Row]:
    with ExitStack() as stack, throwaway_database():
        per_server = BACKENDS // SERVERS
        starting = [_serve(stack, s * per_server, per_server, NODES, PODS) for s in range(SERVERS)]
        empty = _serve(stack, 0, 1, 0, 0, prefix="empty")
        urls = {}
        for s, url in enumerate(starting):
            base = url()
            for i in range(s * per_server, (s + 1) * per_server):
                urls[f"fleet-{i:02d}"] = f"{base}/clusters/fleet-{i:02d}"
        urls["fleet-empty"] = f"{empty()}/clusters/empty-00"
        _configure(urls)
        print(f"  {len(urls)} clusters served and configured", file=sys.stderr, flush=True)
        return _measure(sorted(name for name in urls if name != "fleet-empty"))


def _measure(names: list[str]) -> list[Row]:
    from django.db import connection

    from clusters import inventory
    from clusters.kube.connection import connect
    from clusters.kube.node_pod_lists import list_pods
    from clusters.models import Backend, Node
    from pools.models import NodeMembership, Platform

    database = connection.settings_dict["NAME"]
    connection.close()  # the watcher processes write; this one only reads until the node event below
    empty = _say("watchers started, empty inventory", _restart(names, database))
    assert Node.objects.count() == BACKENDS * NODES, Node.objects.count()
    again = [_say("watchers restarted", _restart(names, database)) for _ in range(3)]
    rows = [
        Row(
            f"fleet inventory: {BACKENDS} backends x ({NODES} nodes + {PODS} pods), a watcher started, empty inventory",
            empty,
            empty,
            1,
            note=f"the first sync ever (no target: #36's is the restart's, below); {Platform.objects.count()} "
            f"platforms, {NodeMembership.objects.count()} memberships written",
        ),
        Row(
            "  restart: the full inventory resynced (watch_cluster beside watch_workflows)",
            statistics.median(again),
            max(again),
            3,
            target="≤ 60 s",
        ),
    ]

    backend = Backend.objects.get(name=names[0])
    index = inventory.PodIndex.build(list_pods(connect(backend)).records)
    kube = connect(backend)
    raw = kube.json("reading", kube.core.read_node, Node.objects.filter(backend=backend).first().name)
    flip = {"value": 0}

    def node_event():
        flip["value"] ^= 1
        raw["metadata"]["labels"]["bench/flip"] = str(flip["value"])
        inventory.apply_node_event(backend.pk, "MODIFIED", raw, index)

    rows.append(
        measure(
            f"fleet: one node event (label change + membership), {Node.objects.count()} nodes in the inventory",
            node_event,
            runs=200,
            warmup=5,
            target="≤ 3 ms p99",
        )
    )
    connection.close()
    loaded = [_rss_once_watching(names[0], database) for _ in range(3)]
    bare = [_rss_once_watching("fleet-empty", database) for _ in range(3)]
    held, base = statistics.median(r for _, r in loaded), statistics.median(r for _, r in bare)
    took = sorted(t for t, _ in loaded)
    rows.append(
        Row(
            f"fleet: one watcher of one backend ({NODES} nodes + {PODS} pods) started and watching",
            statistics.median(took),
            took[-1],
            3,
            note=f"memory (RSS) once watching: {held / 2**20:.0f} MiB, {(held - base) / 2**20:.0f} MiB above a "
            f"watcher of an empty cluster ({base / 2**20:.0f} MiB)",
        )
    )
    return rows
