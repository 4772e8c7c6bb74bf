"""``python -m kubesim --port 8001 [--fleet demo|demo-clusters] [--kubelet] [--machine-pools on|demo] [--state FILE]
[--ocm-cluster ID[:TOKEN]]``: serve a simulated cluster until killed; with ``--fleet demo-clusters``, one per demo
backend, each under ``/clusters/<backend>`` with its share of the fleet (kubesim.fleet.DEMO_CLUSTERS).

With ``--state``, the objects are saved to FILE on every change and loaded from it at start (instead of the fleet),
so a restarted cluster keeps its pods and finishes them (with ``demo-clusters``, FILE is a folder of
``<backend>.json`` files). ``--machine-pools`` turns machine pools (OCM store, Karpenter NodePools) into nodes, with
the simulated autoscaler and spot interruptions (kubesim.autoscaler); ``demo`` also puts the demo's two machine
pools in the OCM store (kubesim.fleet.DEMO_MACHINE_POOLS; with ``demo-clusters``, rosa-cluster-01's) in place of
the demo fleet's static ``additional`` and ``ml-training`` nodes. ``--ocm-cluster`` serves an OpenShift Cluster
Manager cluster's machine pools beside the Kubernetes API (kubesim.ocm), in every cluster served."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .fleet import (
    DEMO_CLUSTERS,
    DEMO_MACHINE_POOL_CLUSTER,
    DEMO_MACHINE_POOLS,
    DEMO_OCM_CLUSTER_ID,
    MACHINEPOOL_LABEL,
    demo_cluster_fleet,
    demo_fleet,
    load_fleet,
    synthetic_fleet,
)
from .machinepools import POOL_ANNOTATION
from .server import EmulatorServer
from .statefile import StateFile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubesim", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--fleet",
        choices=["demo", "demo-clusters", "none"],
        default="none",
        help="load the demo fleet of nodes (kubesim.fleet.demo_fleet); demo-clusters: one simulated cluster per "
        "demo backend, each with its share of the fleet, under /clusters/<backend> (kubesim.fleet.DEMO_CLUSTERS; "
        "--state then names a folder of <backend>.json files)",
    )
    parser.add_argument(
        "--synthetic", metavar="NODES,PODS", help="load kubesim.fleet.synthetic_fleet(NODES, PODS) instead"
    )
    parser.add_argument("--kubelet", action="store_true", help="bind and run pods (kubesim.kubelet)")
    parser.add_argument("--start-delay", type=float, default=1.0, help="kubelet: seconds Pending -> Running")
    parser.add_argument("--run-seconds", type=float, default=5.0, help="kubelet: seconds Running -> Succeeded")
    parser.add_argument(
        "--private-registry",
        action="append",
        help="kubelet: a registry whose images need an image pull secret (repeatable; default nvcr.io)",
    )
    parser.add_argument("--git-version", default="v1.33.0")
    parser.add_argument(
        "--schedulers", default="", metavar="NAMES", help="serve quota schedulers' CRDs: kai, kueue (comma-separated)"
    )
    parser.add_argument("--state", metavar="FILE", help="save the objects to FILE; load them from it at start")
    machine = parser.add_argument_group("machine pools (kubesim.autoscaler)")
    machine.add_argument(
        "--machine-pools",
        choices=["off", "on", "demo"],
        default="off",
        help="turn machine pools into nodes; demo: with the demo's two machine pools (kubesim.fleet)",
    )
    machine.add_argument("--boot-seconds", type=float, default=20.0, help="seconds a new node is NotReady")
    machine.add_argument("--scale-up-seconds", type=float, default=5.0, help="seconds a pod waits before scale-up")
    machine.add_argument("--scale-down-seconds", type=float, default=120.0, help="seconds an idle node stays")
    machine.add_argument("--spot-notice-seconds", type=float, default=120.0, help="spot interruption notice")
    machine.add_argument(
        "--spot-interruption-every",
        type=float,
        metavar="SECONDS",
        help="interrupt a random spot node of a machine pool about this often (off by default)",
    )
    parser.add_argument(
        "--ocm-cluster",
        action="append",
        default=[],
        metavar="ID[:TOKEN]",
        help="serve an OpenShift Cluster Manager cluster's machine pools (kubesim.ocm); repeatable",
    )
    args = parser.parse_args(argv)

    kubelet = {"start_delay": args.start_delay, "run_seconds": args.run_seconds} if args.kubelet else False
    if kubelet and args.private_registry:
        kubelet["private_registries"] = tuple(args.private_registry)
    schedulers = [name for name in args.schedulers.split(",") if name]
    options = {"kubelet": kubelet, "git_version": args.git_version, "schedulers": schedulers}
    try:
        if args.fleet == "demo-clusters":  # one simulated cluster per demo backend, under /clusters/<name>
            clusters = {name: EmulatorServer(**options) for name in DEMO_CLUSTERS}
            server = EmulatorServer(args.host, args.port, clusters=clusters, git_version=args.git_version)
        else:
            clusters = {}
            server = EmulatorServer(args.host, args.port, **options)
    except ValueError as error:
        print(f"kubesim: {error}", file=sys.stderr)
        return 2
    served = clusters or {"": server}
    states, restored = [], {}
    for name, cluster in served.items():
        try:
            path = Path(args.state) / f"{name}.json" if name and args.state else args.state
            state, restored[name] = prepare(cluster, args, name, path)
        except ValueError as error:  # JSON or format: say which file, the user may delete it
            print(f"kubesim: {error} (delete it to start afresh)", file=sys.stderr)
            return 2
        if state is not None:
            states.append(state)
    for state in states:
        state.save()
        state.attach()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    url = server.start()
    for cluster in args.ocm_cluster:
        cluster_id, _, token = cluster.partition(":")
        for each in served.values():
            each.emulator.ocm_add_cluster(cluster_id, token=token or None)
    print(url, flush=True)  # first stdout line: the URL, for scripts
    for name, cluster in served.items():
        emulator = cluster.emulator
        print(
            f"kubesim: serving {f'{cluster.url}: ' if name else ''}{len(emulator.list('nodes'))} nodes, "
            f"{len(emulator.list('pods'))} pods{' (restored from its state file)' if restored[name] else ''}",
            file=sys.stderr,
        )
    print(f"kubesim: kubelet {'on' if args.kubelet else 'off'}; Ctrl-C to stop", file=sys.stderr, flush=True)
    done.wait()
    server.stop()
    return 0


def prepare(server: EmulatorServer, args: argparse.Namespace, name: str, state_path: str | Path | None):
    """One cluster's machine pools, then its objects: from its state file if there is one, else its fleet.
    Returns (its StateFile or None, whether restored); ValueError naming the file it cannot load."""
    if args.machine_pools != "off":  # before loading a state file: it may hold NodePools
        server.enable_machine_pools(
            boot_seconds=args.boot_seconds,
            scale_up_seconds=args.scale_up_seconds,
            scale_down_seconds=args.scale_down_seconds,
            spot_notice_seconds=args.spot_notice_seconds,
            spot_interruption_every=args.spot_interruption_every,
        )
    state = StateFile(server.emulator, state_path) if state_path else None
    restored = state is not None and state.exists()
    if restored:
        try:
            state.load()
        except ValueError as error:
            raise ValueError(f"cannot load the state file {state_path}: {error}") from None
    elif args.fleet == "demo":
        load_fleet(server, demo_fleet(machine_pools=args.machine_pools == "demo"))
    elif args.fleet == "demo-clusters":
        load_fleet(server, demo_cluster_fleet(name))
    if args.machine_pools == "demo" and name in ("", DEMO_MACHINE_POOL_CLUSTER):
        demo_machine_pools(server)
    if args.synthetic and not restored and not name:
        n_nodes, n_pods = (int(x) for x in args.synthetic.split(","))
        load_fleet(server, *synthetic_fleet(n_nodes, n_pods))
    return state, restored


def demo_machine_pools(server: EmulatorServer) -> None:
    """Put the demo's machine pools in the OCM store (keeping any saved state of theirs) and drop static nodes of
    theirs a state file from before machine pools may hold, so that ``ml-training`` scales from zero."""
    emulator = server.emulator
    saved = emulator.ocm_machine_pools.setdefault(DEMO_OCM_CLUSTER_ID, {})
    for pool_id, pool in DEMO_MACHINE_POOLS.items():
        saved.setdefault(pool_id, pool)
        for node in emulator.list("nodes", label_selector=f"{MACHINEPOOL_LABEL}={pool_id}"):
            if POOL_ANNOTATION not in (node["metadata"].get("annotations") or {}):
                emulator.delete("nodes", node["metadata"]["name"])


if __name__ == "__main__":
    sys.exit(main())
