"""Keep inventories current between full syncs: list once, then watch nodes and pods (`watch_cluster`).

Per backend: a full sync (`inventory.sync_backend`) gives the inventory, an in-memory `PodIndex` and
the lists' resourceVersions; then one thread per kind (nodes, pods) watches from that version and puts
events on one queue. `process()` applies queued events in the caller's thread, so every database write
happens in one thread, in order.

* A watch that ends (server timeout) reconnects from the last resourceVersion it saw.
* `410 Gone` (the version was compacted): that kind is listed again (`relist`), then watched from the
  new list's version. Events queued before are applied first; the relist then overwrites them.
* Network errors and 5xx: the backend is marked degraded, the stream reconnects with backoff (capped);
  when it reconnects, the backend is marked online again. A failed relist is retried with backoff.

Replicas (clusters.leases): a replica watches the backends whose lease it holds. Taking one over, it syncs
it in full rather than resuming the watches from the versions its lease records: the pod index that turns a
pod event into node sums lives in the memory of the replica that built it. A sync writes absolute state
(each node's fields and sums), so whatever the previous holder applied or not, the inventory is then the
cluster's. Every write (the sync, an event, a relist) goes through the lease's fence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from clusters import inventory
from clusters.inventory import Fenced, PodIndex
from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.kube.node_pod_lists import WATCH_SECONDS, WatchStream, list_nodes, list_pods
from clusters.leases import Held
from clusters.watchloop import BACKOFF_START, BackendWatcher, WatchThread

log = logging.getLogger(__name__)


@dataclass
class _Stream(WatchThread):
    """One watched kind of one backend; `version` is None while a relist is pending."""

    backend: _Backend
    kind: str  # "nodes" | "pods"
    version: str | None = None
    relist_due: float | None = None  # monotonic time of the next relist attempt
    failures: int = 0


@dataclass
class _Backend:
    pk: int
    name: str
    kube: KubeClient
    index: PodIndex = field(default_factory=PodIndex)
    streams: dict[str, _Stream] = field(default_factory=dict)
    degraded: bool = False
    lease: Held | None = None


class ClusterWatcher(BackendWatcher):
    """`start()`, then `process()` in a loop (or `run(stop)`), then `stop()` (clusters.watchloop)."""

    command = "watch_cluster"

    def __init__(self, names: list[str] | None = None, *, watch_seconds: int = WATCH_SECONDS, **options) -> None:
        super().__init__(names, watch_seconds=watch_seconds, **options)

    # ----------------------------------------------------------------------------- lifecycle

    def _not_watched(self, backend, error: KubeError) -> None:
        inventory.mark_degraded(backend.pk, error)

    def _watch(self, backend, kube: KubeClient, lease: Held) -> list[str]:
        """Sync the backend once, then start its watch threads."""
        state = _Backend(backend.pk, backend.name, kube, lease=lease)
        state.streams = {kind: _Stream(backend=state, kind=kind) for kind in ("nodes", "pods")}
        self.backends.append(state)

        def fence(nodes_version: str, pods_version: str) -> bool:
            check = self.fence_of(state, {"nodes": nodes_version, "pods": pods_version})
            return check is not None and check()

        try:
            result = inventory.sync_backend(state.pk, kube=state.kube, fence=fence)
        except Fenced:
            self._drop(state.pk, "its lease was lost during the first sync")
            return [f"backend {state.name}: lease lost during the first sync; not watched"]
        except KubeError as error:
            line = f"backend {state.name}: initial sync failed, retrying: {error}"
            state.degraded = True
            for stream in state.streams.values():
                stream.relist_due = time.monotonic() + BACKOFF_START
        else:
            state.index = result.index
            state.streams["nodes"].version = result.nodes_version
            state.streams["pods"].version = result.pods_version
            line = f"backend {state.name}: {result.nodes} nodes, {result.pods} pods; watching"
        for stream in state.streams.values():
            self._spawn(stream, lambda stream=stream: self._watch_loop(stream), f"watch-{state.name}-{stream.kind}")
            if stream.version is not None:
                stream.wake.set()
        return [line]

    def _watch_threads(self) -> Iterable[WatchThread]:
        return [stream for backend in self.backends for stream in backend.streams.values()]

    def _threads_of(self, state: _Backend) -> Iterable[WatchThread]:
        return state.streams.values()

    def _version_of(self, item: tuple) -> dict | None:
        if item[0] != "event":
            return None
        version = ((item[3] or {}).get("metadata") or {}).get("resourceVersion")
        return {item[1].kind: str(version)} if version else None

    # ----------------------------------------------------------------------------- applying (caller's thread)

    def _tick(self) -> None:
        self._run_due_relists()  # EventDrain runs _tick through its database guard (locked writes retried)

    def _apply_item(self, item: tuple) -> int:
        """An event: applied with the lease's fence inside the inventory's own transaction (no savepoint, one
        round trip more; clusters.leases). Anything else: `fenced_write` around `_apply`."""
        what, stream, *rest = item
        if what != "event":
            return super()._apply_item(item)
        backend = stream.backend
        fence = self.fence_of(backend, self._version_of(item))
        if fence is None:  # released or lost since the item was queued
            return 0
        event_type, obj = rest
        apply = inventory.apply_node_event if stream.kind == "nodes" else inventory.apply_pod_event
        try:
            apply(backend.pk, event_type, obj, backend.index, fence=fence)
        except Fenced:
            self._drop(backend.pk, "its lease is lost or expired (a write was refused)")
            self.fenced += 1
            return 0
        self.applied += 1
        return 1

    def _apply(self, item: tuple) -> int:
        what, stream, *rest = item
        backend = stream.backend
        if what == "connected" and backend.degraded:
            backend.degraded = False
            inventory.mark_online(backend.pk)
        elif what == "error":
            backend.degraded = True
            inventory.mark_degraded(backend.pk, rest[0])
        elif what == "gone":
            stream.relist_due = time.monotonic()
        return 0

    def _run_due_relists(self) -> None:
        now = time.monotonic()
        for backend in list(self.backends):  # a relist whose lease was lost drops its backend
            for stream in backend.streams.values():
                if stream.relist_due is not None and stream.relist_due <= now:
                    self._relist(stream)

    def _relist(self, stream: _Stream) -> None:
        backend = stream.backend
        try:
            if stream.kind == "nodes":
                listing = list_nodes(backend.kube)
                write = lambda: inventory.replace_nodes(backend.pk, listing.records, backend.index)  # noqa: E731
            else:
                listing = list_pods(backend.kube)
                index = PodIndex.build(listing.records)
                write = lambda: inventory.replace_pods(backend.pk, index)  # noqa: E731
            written, _ = self.fenced_write(backend, write, {stream.kind: listing.resource_version})
            if not written:  # the lease is no longer ours: the backend was dropped
                return
            if stream.kind == "pods":
                backend.index = index
        except KubeError as error:
            stream.failures += 1
            stream.relist_due = time.monotonic() + self._backoff(stream.failures)
            backend.degraded = True
            inventory.mark_degraded(backend.pk, error)
            return
        log.info("backend %s: listed %s again (%d)", backend.name, stream.kind, len(listing.records))
        stream.failures = 0
        stream.relist_due = None
        if all(s.relist_due is None for s in backend.streams.values()):
            backend.degraded = False
            inventory.mark_synced(backend.pk)
        stream.version = listing.resource_version
        stream.wake.set()

    # ----------------------------------------------------------------------------- watching (one thread per stream)

    def _watch_loop(self, stream: _Stream) -> None:
        failures = 0
        while not self._halted(stream):
            stream.wake.wait()
            if self._halted(stream):
                return
            if stream.version is None:  # a relist is pending; the applier will wake us
                stream.wake.clear()
                if stream.version is not None:  # it did, between the test and the clear
                    stream.wake.set()
                continue

            def opened(stream=stream) -> None:
                nonlocal failures
                if failures:  # the cluster answers again
                    failures = 0
                    self.events.put(("connected", stream))

            watch = WatchStream(
                stream.backend.kube, stream.kind, stream.version, timeout_seconds=self.watch_seconds, on_open=opened
            )
            stream.current = watch
            try:
                for event_type, obj in watch:
                    self.events.put(("event", stream, event_type, obj))
                stream.version = watch.resource_version
            except KubeError as error:
                if self._halted(stream):
                    return
                if error.gone:
                    stream.version = None
                    stream.wake.clear()
                    self.events.put(("gone", stream))
                    continue
                failures += 1
                stream.version = watch.resource_version
                self._failed(("error", stream, error), failures)
            finally:
                stream.current = None
