"""Follow our pods as they change (`manage.py watch_workflows`): list, then watch, per backend.

One thread per backend lists the pods carrying this portal's instance label, then watches them from the
list's resourceVersion, and puts what it reads on one queue; `process()` applies the queue in the
caller's thread, so every database write happens in one thread, in order:

* a listing → `reconcile.reconcile_backend` (the same code as the periodic reconciliation);
* an event → `workflows.lifecycle.observe.apply_pod_event`.

A watch that ends (server timeout) resumes from the last resourceVersion; `410 Gone` lists again;
network errors and 5xx reconnect with capped exponential backoff (resuming, or listing again if the
version has expired meanwhile). Timeouts and the reaper are periodic jobs: Celery beat's in production,
`manage.py periodic`'s in the embedded default (portal.periodic), never this loop's.

Replicas (clusters.leases): a replica watches the backends whose lease it holds. Each event is applied in
one transaction with the lease's fence, which records the event's resourceVersion; a replica that takes a
backend over watches from that version (listing only when there is none, or it is gone), so every event
after the last one applied is applied, and none before it again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from clusters.kube import pods
from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.leases import Held
from clusters.watchloop import BackendWatcher, WatchThread
from workflows import reconcile
from workflows.lifecycle.create import instance
from workflows.lifecycle.observe import apply_pod_event

log = logging.getLogger(__name__)


@dataclass
class _Backend(WatchThread):
    pk: int
    name: str
    kube: KubeClient
    lists: int = 0
    lease: Held | None = None


class WorkflowWatcher(BackendWatcher):
    """`start()`, then `process()` in a loop (or `run(stop)`), then `stop()` (clusters.watchloop)."""

    command = "watch_workflows"

    def __init__(
        self,
        names: list[str] | None = None,
        *,
        watch_seconds: int = pods.WATCH_SECONDS,
        **options,
    ) -> None:
        super().__init__(names, watch_seconds=watch_seconds, **options)
        self.errors = 0

    def _watch(self, backend, kube: KubeClient, lease: Held) -> list[str]:
        state = _Backend(pk=backend.pk, name=backend.name, kube=kube, lease=lease)
        self.backends.append(state)
        version = lease.versions.get("pods") or None
        self._spawn(state, lambda: self._loop(state, version), f"watch-workflows-{backend.name}")
        since = f" from resourceVersion {version}" if version else ""
        return [f"backend {backend.name}: watching pods labelled {pods.instance_selector(instance())}{since}"]

    def _watch_threads(self) -> Iterable[WatchThread]:
        return self.backends

    def _threads_of(self, state: _Backend) -> Iterable[WatchThread]:
        return [state]

    def _apply_item(self, item: tuple) -> int:
        """A listing is reconciled task by task (each its own transaction, as the periodic reconciliation
        does), between two fences: the lease is checked before, its version recorded after. Observations
        are guarded, so a listing applied again (by the next holder, if this one dies in between) is harmless."""
        if item[0] != "list":
            return super()._apply_item(item)
        state = item[1]
        if not self.fenced_write(state, lambda: None)[0]:
            return 0
        applied = self._apply(item)
        self.fenced_write(state, lambda: None, self._version_of(item))
        return applied

    def _version_of(self, item: tuple) -> dict | None:
        if item[0] == "list":
            return {"pods": item[2].resource_version}
        if item[0] == "event":
            version = ((item[3] or {}).get("metadata") or {}).get("resourceVersion")
            return {"pods": str(version)} if version else None
        return None

    # ----------------------------------------------------------------------------- applying (caller's thread)

    def _apply(self, item: tuple) -> int:
        what, state, *rest = item
        if what == "list":
            reconcile.reconcile_backend(state.pk, rest[0])
            state.lists += 1
            return 1
        if what == "event":
            event_type, obj = rest
            apply_pod_event(state.pk, event_type, obj)
            self.applied += 1
            return 1
        if what == "error":
            self.errors += 1
            log.warning("watch_workflows: backend %s: %s", state.name, rest[0])
        return 0

    # ----------------------------------------------------------------------------- reading (one thread per backend)

    def _loop(self, state: _Backend, version: str | None) -> None:
        """List (unless resuming from `version`, the last one applied under the backend's lease), then watch."""
        selector = pods.instance_selector(instance())
        failures = 0

        def opened() -> None:
            nonlocal failures
            failures = 0

        while not self._halted(state):
            try:
                if version is None:
                    listing = reconcile.list_ours(state.kube)
                    self.events.put(("list", state, listing))
                    version = listing.resource_version
                    failures = 0
                watch = pods.watch_pods(
                    state.kube, selector, version, timeout_seconds=self.watch_seconds, on_open=opened
                )
                state.current = watch
                for event_type, obj in watch:
                    self.events.put(("event", state, event_type, obj))
                version = watch.resource_version
            except KubeError as error:
                if self._halted(state):
                    return
                if error.gone:
                    version = None
                    continue
                if state.current is not None:  # resume after the last event we saw
                    version = state.current.resource_version
                failures += 1
                self._failed(("error", state, error), failures)
            except Exception as error:  # noqa: BLE001 - keep watching whatever happens
                if self._halted(state):
                    return
                failures += 1
                self._failed(("error", state, error), failures)
            finally:
                state.current = None
