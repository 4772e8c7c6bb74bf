"""``python -m kubesim --port 8001 [--fleet demo] [--kubelet]``: serve a simulated cluster until killed."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .server import EmulatorServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubesim", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--fleet", choices=["demo", "none"], default="none",
                        help="load the demo fleet of nodes (kubesim.fleet.demo_fleet)")
    parser.add_argument("--synthetic", metavar="NODES,PODS",
                        help="load kubesim.fleet.synthetic_fleet(NODES, PODS) instead")
    parser.add_argument("--kubelet", action="store_true", help="bind and run pods (kubesim.kubelet)")
    parser.add_argument("--start-delay", type=float, default=1.0, help="kubelet: seconds Pending -> Running")
    parser.add_argument("--run-seconds", type=float, default=5.0, help="kubelet: seconds Running -> Succeeded")
    parser.add_argument("--git-version", default="v1.33.0")
    args = parser.parse_args(argv)

    kubelet = {"start_delay": args.start_delay, "run_seconds": args.run_seconds} if args.kubelet else False
    server = EmulatorServer(args.host, args.port, fleet="demo" if args.fleet == "demo" else None,
                            kubelet=kubelet, git_version=args.git_version)
    if args.synthetic:
        from .fleet import load_fleet, synthetic_fleet
        n_nodes, n_pods = (int(x) for x in args.synthetic.split(","))
        load_fleet(server, *synthetic_fleet(n_nodes, n_pods))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    url = server.start()
    print(url, flush=True)  # first stdout line: the URL, for scripts
    print(f"kubesim: serving {len(server.emulator.list('nodes'))} nodes; kubelet "
          f"{'on' if args.kubelet else 'off'}; Ctrl-C to stop", file=sys.stderr, flush=True)
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
