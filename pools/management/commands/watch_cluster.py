"""`watch_cluster [NAME…]`: list, then keep the node inventory current from watch events, until stopped."""

from __future__ import annotations

import gc
import signal
import threading

from pools.services.inventory_watch import ClusterWatcher
from portal.commands import LongRunningCommand


class Command(LongRunningCommand):
    help = "Keep the node inventory of backends (all connected ones by default) current by watching them."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", metavar="NAME", help="backends to watch (default: all connected)")
        parser.add_argument("--watch-seconds", type=int, default=300,
                            help="server-side timeout of one watch request; it then reconnects")

    def handle(self, *args, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        watcher = ClusterWatcher(options["names"] or None, watch_seconds=options["watch_seconds"])
        try:
            for line in watcher.start():
                self.stdout.write(line)
            gc.collect()
            gc.freeze()  # the pod index is long-lived: keep the collector from rescanning it on every pass
            if not watcher.backends:
                self.stdout.write("no backend with a connection to watch")
                return
            watcher.run(stop)
        finally:
            watcher.stop()
            skipped = f"; {watcher.dropped} not applied (see the log)" if watcher.dropped else ""
            self.stdout.write(f"stopped after {watcher.applied} events{skipped}")
