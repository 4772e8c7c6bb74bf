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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from clusters.kube import pods
from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
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

    def _watch(self, backend, kube: KubeClient) -> list[str]:
        state = _Backend(pk=backend.pk, name=backend.name, kube=kube)
        self.backends.append(state)
        self._spawn(state, lambda: self._loop(state), f"watch-workflows-{backend.name}")
        return [f"backend {backend.name}: watching pods labelled {pods.instance_selector(instance())}"]

    def _watch_threads(self) -> Iterable[WatchThread]:
        return self.backends

    def _threads_of(self, state: _Backend) -> Iterable[WatchThread]:
        return [state]

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

    def _loop(self, state: _Backend) -> None:
        selector = pods.instance_selector(instance())
        version: str | None = None
        failures = 0

        def opened() -> None:
            nonlocal failures
            failures = 0

        while not self._stopping.is_set():
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
                if self._stopping.is_set():
                    return
                if error.gone:
                    version = None
                    continue
                if state.current is not None:  # resume after the last event we saw
                    version = state.current.resource_version
                failures += 1
                self._failed(("error", state, error), failures)
            except Exception as error:  # noqa: BLE001 - keep watching whatever happens
                if self._stopping.is_set():
                    return
                failures += 1
                self._failed(("error", state, error), failures)
            finally:
                state.current = None
