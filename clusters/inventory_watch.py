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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from clusters import inventory
from clusters.inventory import PodIndex
from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.kube.node_pod_lists import WATCH_SECONDS, WatchStream, list_nodes, list_pods
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


class ClusterWatcher(BackendWatcher):
    """`start()`, then `process()` in a loop (or `run(stop)`), then `stop()` (clusters.watchloop)."""

    command = "watch_cluster"

    def __init__(self, names: list[str] | None = None, *, watch_seconds: int = WATCH_SECONDS, **options) -> None:
        super().__init__(names, watch_seconds=watch_seconds, **options)

    # ----------------------------------------------------------------------------- lifecycle

    def _not_watched(self, backend, error: KubeError) -> None:
        inventory.mark_degraded(backend.pk, error)

    def _watch(self, backend, kube: KubeClient) -> list[str]:
        """Sync the backend once, then start its watch threads."""
        state = _Backend(backend.pk, backend.name, kube)
        state.streams = {kind: _Stream(backend=state, kind=kind) for kind in ("nodes", "pods")}
        self.backends.append(state)
        try:
            result = inventory.sync_backend(state.pk, kube=state.kube)
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

    # ----------------------------------------------------------------------------- applying (caller's thread)

    def _tick(self) -> None:
        self._run_due_relists()  # EventDrain runs _tick through its database guard (locked writes retried)

    def _apply(self, item: tuple) -> int:
        what, stream, *rest = item
        backend = stream.backend
        if what == "event":
            event_type, obj = rest
            if stream.kind == "nodes":
                inventory.apply_node_event(backend.pk, event_type, obj, backend.index)
            else:
                inventory.apply_pod_event(backend.pk, event_type, obj, backend.index)
            self.applied += 1
            return 1
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
        for backend in self.backends:
            for stream in backend.streams.values():
                if stream.relist_due is not None and stream.relist_due <= now:
                    self._relist(stream)

    def _relist(self, stream: _Stream) -> None:
        backend = stream.backend
        try:
            if stream.kind == "nodes":
                listing = list_nodes(backend.kube)
                inventory.replace_nodes(backend.pk, listing.records, backend.index)
            else:
                listing = list_pods(backend.kube)
                backend.index = PodIndex.build(listing.records)
                inventory.replace_pods(backend.pk, backend.index)
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
        while not self._stopping.is_set():
            stream.wake.wait()
            if self._stopping.is_set():
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
                if self._stopping.is_set():
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
