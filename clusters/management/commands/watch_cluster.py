"""`watch_cluster [NAME…]`: list, then keep the node inventory current from watch events, until stopped."""

from __future__ import annotations

import gc

from clusters.inventory_watch import ClusterWatcher
from clusters.watchloop import WatchCommand


class Command(WatchCommand):
    help = "Keep the node inventory of backends (all connected ones by default) current by watching them."

    def watcher(self, options) -> ClusterWatcher:
        return ClusterWatcher(
            options["names"] or None, watch_seconds=options["watch_seconds"], replica=self.replica(options)
        )

    def started(self, watcher) -> None:
        gc.collect()
        gc.freeze()  # the pod index is long-lived: keep the collector from rescanning it on every pass
