"""Simulated clusters for the fleet benchmarks: `python -m bench.kubesim_fleet PREFIX FIRST COUNT NODES PODS`
serves clusters PREFIX-FIRST … PREFIX-(FIRST+COUNT-1) under /clusters/<name> of one kubesim server, each with
its own synthetic fleet (kubesim.fleet.synthetic_fleet, seeded by its index), prints the server's URL on its
first line and serves until its standard input closes (so it dies with the bench that started it).

A real fleet has one API server per cluster; here a few processes serve several each, so serving them does not
all share one interpreter with the portal being measured.
"""

from __future__ import annotations

import gc
import sys


def main(argv: list[str]) -> int:
    from kubesim import EmulatorServer
    from kubesim.fleet import load_fleet, synthetic_fleet

    prefix, first, count, nodes, pods = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    clusters = {f"{prefix}-{index:02d}": EmulatorServer() for index in range(first, first + count)}
    for index, cluster in enumerate(clusters.values(), start=first):
        load_fleet(cluster, *synthetic_fleet(nodes, pods, seed=index))
    gc.collect()
    gc.freeze()  # the fleet is long-lived: keep the collector off it while serving
    with EmulatorServer(clusters=clusters) as server:
        print(server.url, flush=True)
        sys.stdin.read()  # until the bench closes our stdin (or dies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
