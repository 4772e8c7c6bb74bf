"""The simulated apiserver (kubesim) the tests and `make dev` run against: how long it takes to start, to
generate and load a fleet, to answer once its request log is full, and to list pending pods while its
kubelet decides 3,000 of them. The tests (tests/kubesim) check what each of these does, not how fast.

No Django, no database: an emulator on 127.0.0.1 (a random port) per row, driven through the official client.
"""

from __future__ import annotations

import json
import statistics
import time

from kubernetes import client

from bench.harness import Row, measure
from kubesim import EmulatorServer
from kubesim.fleet import load_fleet, synthetic_fleet

TENTH = (500, 5000)  # nodes, pods: a tenth of the inventory benchmark's scale


def _row(name: str, samples: list[float], target: str, note: str = "") -> Row:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return Row(name, statistics.median(ordered), p99, len(ordered), target, note)


def _api(url: str) -> client.CoreV1Api:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))


def _startup(runs: int = 10) -> Row:
    samples = []
    for _ in range(runs):
        server = EmulatorServer()
        started = time.perf_counter()
        server.start()
        samples.append(time.perf_counter() - started)
        server.stop()
    return _row("kubesim: EmulatorServer start", samples, "< 0.5 s")


def _fleet(runs: int = 3) -> list[Row]:
    nodes, pods = TENTH
    generate = measure(
        f"kubesim: synthetic_fleet({nodes} nodes, {pods} pods)",
        lambda: synthetic_fleet(nodes, pods, seed=7),
        runs=runs,
        warmup=1,
        target="< 3 s",
    )
    samples = []
    for _ in range(runs):
        fleet = synthetic_fleet(nodes, pods, seed=7)  # load_fleet adopts the dicts: a fresh fleet each time
        with EmulatorServer() as server:
            started = time.perf_counter()
            load_fleet(server, *fleet)
            samples.append(time.perf_counter() - started)
    return [generate, _row(f"kubesim: load_fleet({nodes} nodes, {pods} pods)", samples, "< 3 s")]


def _full_request_log(requests: int = 1000, window: int = 50) -> Row:
    """A user reaction makes kmock scan its request log on every request: capped at `window`, a request
    after `requests` of them takes about as long as one of the first."""
    with EmulatorServer() as server:
        server.emulator.request_log_size = window
        server.emulator["list v1/nodes"] << 503
        v1 = _api(server.url)
        timings = []
        for _ in range(requests):
            started = time.perf_counter()
            v1.read_namespace("default")
            timings.append(time.perf_counter() - started)
    early = statistics.median(timings[:window])
    row = _row(
        f"kubesim: a request after {requests} (log capped at {window})",
        timings[-window:],
        f"≤ 3× the first {window}'s median",
    )
    row.note = f"first {window}: median {early * 1e3:.2f} ms ({row.median_s / early:.1f}×)"
    return row


def _lists_while_the_kubelet_decides(nodes: int = 300, pods: int = 3000) -> Row:
    fleet = synthetic_fleet(nodes, pods, seed=3)
    with EmulatorServer(kubelet={"start_delay": 0.05, "run_seconds": 0.2}) as server:
        load_fleet(server, *fleet)
        v1 = _api(server.url)
        timings, undecided, deadline = [], None, time.monotonic() + 60
        while undecided != 0 and time.monotonic() < deadline:
            started = time.perf_counter()
            page = json.loads(
                v1.list_pod_for_all_namespaces(
                    field_selector="status.phase=Pending,spec.nodeName=", _preload_content=False
                ).data
            )
            timings.append(time.perf_counter() - started)
            undecided = sum(1 for pod in page["items"] if not _scheduled(pod))
            time.sleep(0.05)
    row = _row(f"kubesim: list pending pods while the kubelet decides {pods}", timings, "slowest < 2 s")
    row.note = f"slowest {max(timings):.2f} s" + ("" if undecided == 0 else f"; {undecided} still undecided after 60 s")
    return row


def _scheduled(pod: dict) -> bool:
    return any(c["type"] == "PodScheduled" for c in pod["status"].get("conditions", ()))


def run() -> list[Row]:
    return [_startup(), *_fleet(), _full_request_log(), _lists_while_the_kubelet_decides()]
