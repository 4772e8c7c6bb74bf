"""Nodes and pods of a cluster: paginated lists, watch streams, and conversion to plain records.

* `list_nodes` / `list_pods`: `limit` + `continue` pages; the collection resourceVersion of the list
  is returned so a watch can start exactly where the list ended. A continue token that expires
  mid-list (410) restarts the list once from the beginning.
* `WatchStream`: one watch request from a resourceVersion; yields `(type, object)`; an `ERROR` event
  becomes a KubeError (410 `gone`: list again). `shutdown()` interrupts it from another thread.
* `node_record` / `pod_record`: the fields the inventory keeps, quantities in scheduler units
  (parsed by the pure engine, the same rules the placement preview uses).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError, from_exception
from pools.engine.errors import EngineError
from pools.engine.placement_fit import parse_allocatable, pod_requests

log = logging.getLogger(__name__)

PAGE_SIZE = 500
WORKLOAD_LABEL = "pool-portal/workflow"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
WATCH_SECONDS = 300  # server-side watch timeout; the watcher reconnects from the last resourceVersion


# ------------------------------------------------------------------------------------------ records


def node_record(raw: dict) -> dict:
    """The stored shape of a Node. Condition heartbeats are dropped so an idle node looks unchanged."""
    metadata, spec, status = (raw.get(key) or {} for key in ("metadata", "spec", "status"))
    name = metadata.get("name") or ""
    labels = dict(metadata.get("labels") or {})
    allocatable = dict(status.get("allocatable") or {})
    try:
        units = parse_allocatable(allocatable, "status.allocatable")
    except EngineError as error:
        log.warning("node %s: unreadable allocatable (%s); counted as zero", name, error.reason)
        units = {}
    conditions = [
        {key: condition.get(key, "") for key in ("type", "status", "reason", "message")}
        for condition in status.get("conditions") or []
        if isinstance(condition, dict)
    ]
    return {
        "name": name,
        "labels": labels,
        "taints": list(spec.get("taints") or []),
        "allocatable": allocatable,
        "capacity": dict(status.get("capacity") or {}),
        "conditions": conditions,
        "unschedulable": bool(spec.get("unschedulable")),
        "ready": any(c["type"] == "Ready" and c["status"] == "True" for c in conditions),
        "gpu_product": str(labels.get(GPU_PRODUCT_LABEL, ""))[:128],
        "units": units,
        "resource_version": str(metadata.get("resourceVersion") or ""),
    }


@dataclass(slots=True)
class PodRecord:
    """What the inventory needs of a pod: where it is bound, whether it counts, and its requests."""

    key: str  # namespace/name
    node: str = ""
    active: bool = False  # bound and not Succeeded/Failed: its requests occupy the node
    workload: bool = False  # a portal workload (labelled pool-portal/workflow)
    requests: dict[str, int] = field(default_factory=dict)


def pod_record(raw: dict) -> PodRecord:
    metadata = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    node = spec.get("nodeName") or ""
    phase = (raw.get("status") or {}).get("phase") or ""
    active = bool(node) and phase not in TERMINAL_PHASES
    requests: dict[str, int] = {}
    if active:
        try:
            requests = pod_requests(raw)
        except EngineError as error:
            log.warning("pod %s: unreadable requests (%s); counted as zero", key, error.reason)
    return PodRecord(key, node, active, WORKLOAD_LABEL in (metadata.get("labels") or {}), requests)


# ------------------------------------------------------------------------------------------ lists


@dataclass
class Listing:
    records: list
    resource_version: str
    pages: int


def list_nodes(kube: KubeClient, page_size: int | None = None) -> Listing:
    return _list_all(kube, "nodes", kube.core.list_node, lambda raw: node_record(raw), page_size or PAGE_SIZE)


def list_pods(kube: KubeClient, page_size: int | None = None) -> Listing:
    return _list_all(
        kube, "pods", kube.core.list_pod_for_all_namespaces, lambda raw: pod_record(raw), page_size or PAGE_SIZE
    )


def _list_all(
    kube: KubeClient, kind: str, method: Callable[..., Any], convert: Callable[[dict], Any], page_size: int
) -> Listing:
    for attempt in (1, 2):
        try:
            return _list_once(kube, kind, method, convert, page_size)
        except KubeError as error:
            if not (error.gone and attempt == 1):
                raise
            log.info("%s: listing %s: continue token expired, listing again", kube.name, kind)
    raise AssertionError("unreachable")


def _list_once(
    kube: KubeClient, kind: str, method: Callable[..., Any], convert: Callable[[dict], Any], page_size: int
) -> Listing:
    records: list = []
    token, pages, version = None, 0, ""
    while True:
        kwargs = {"limit": page_size, "_continue": token} if token else {"limit": page_size}
        with _no_gc():  # decoding a page allocates many small objects; a GC pass per page costs more
            body = kube.json(f"listing {kind}", method, **kwargs)
            records.extend(convert(item) for item in body.get("items") or ())
        pages += 1
        metadata = body.get("metadata") or {}
        version = version or str(metadata.get("resourceVersion") or "")
        token = metadata.get("continue")
        if not token:
            return Listing(records, version, pages)


@contextlib.contextmanager
def _no_gc():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ------------------------------------------------------------------------------------------ watch


class WatchStream:
    """One watch request of `kind` ("nodes" or "pods") from `resource_version`, optionally narrowed by a
    label selector and (pods) a namespace.

    Iterate for `(event_type, object)`; BOOKMARK events only advance `resource_version`. The stream
    ends when the server closes it (timeout); resume from `resource_version`. Errors raise KubeError
    (`gone` for 410: list again). `shutdown()` interrupts a read from another thread.
    """

    def __init__(
        self,
        kube: KubeClient,
        kind: str,
        resource_version: str,
        *,
        timeout_seconds: int = WATCH_SECONDS,
        on_open: Callable[[], None] | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
    ) -> None:
        self.kube, self.kind = kube, kind
        self.resource_version = resource_version
        self.timeout_seconds = timeout_seconds
        self.on_open = on_open
        self.label_selector, self.namespace = label_selector, namespace
        self._response = None
        self._closed = False

    def _open(self):
        kwargs = {
            "watch": True,
            "resource_version": self.resource_version,
            "timeout_seconds": self.timeout_seconds,
            "allow_watch_bookmarks": True,
            "_request_timeout": (self.kube.timeout[0], self.timeout_seconds + 30),
        }
        if self.label_selector:
            kwargs["label_selector"] = self.label_selector
        core, doing = self.kube.core, f"watching {self.kind}"
        if self.kind == "nodes":
            return self.kube.stream(doing, core.list_node, **kwargs)
        if self.namespace:
            return self.kube.stream(doing, core.list_namespaced_pod, self.namespace, **kwargs)
        return self.kube.stream(doing, core.list_pod_for_all_namespaces, **kwargs)

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        self._response = self._open()
        if self._closed:  # shut down while connecting
            self._response.close()
            return
        if self.on_open is not None:
            self.on_open()
        try:
            yield from self._events()
        except KubeError:
            raise
        except Exception as error:  # noqa: BLE001 - a broken stream; the caller reconnects
            if self._closed:
                return
            raise from_exception(error, f"watching {self.kind}") from None
        finally:
            with contextlib.suppress(Exception):
                self._response.release_conn()
                self._response.close()

    def _events(self) -> Iterator[tuple[str, dict]]:
        from kubernetes.watch.watch import iter_resp_lines

        for line in iter_resp_lines(self._response):
            if not line or line.isspace():
                continue
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code") or 0)
                raise KubeError(
                    f"watching {self.kind}: {obj.get('reason', 'Error')}: {obj.get('message', '')}",
                    k8s_status=code,
                    transient=code != 410 and (code >= 500 or code == 429),
                )
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = str(version)
            if kind != "BOOKMARK":
                yield kind, obj

    def shutdown(self) -> None:
        """Interrupt a read in progress in another thread (urllib3's HTTPResponse.shutdown)."""
        self._closed = True
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()
