"""KubeEmulator: an in-memory Kubernetes API server built on kmock's KubernetesScaffold.

kmock 0.8 supplies the request DSL (``emu['list v1/nodes'] << 503`` still works), its Request
model and the Status error rendering; this subclass replaces its routing and storage so that:

* label/field selectors apply on list, watch and deletecollection;
* objects get ``uid``, ``resourceVersion`` (one global counter), ``creationTimestamp``,
  ``generateName`` and ``generation``; lists carry ``kind: XList`` and the collection version;
* create answers 201 / 409 AlreadyExists, get answers 404 NotFound, PUT works with 409 Conflict
  on a stale resourceVersion, PATCH accepts merge / strategic-merge (as merge) / JSON patch;
  ``status`` subresources work; namespaces are a real resource; pods must live in one;
* watch honours ``resourceVersion`` against a bounded per-kind history (410 Expired ERROR event
  when too old) and ``timeoutSeconds``; list pages with ``limit``/``continue`` over a snapshot;
* the request log is capped, and kmock's reactions are consulted only when a test added some.

Storage and write semantics live in :mod:`kubesim.store`, watch streams in
:mod:`kubesim.emulator_watch`; this module holds the public API and the HTTP layer.

All state lives on the event loop that serves HTTP. The public methods (create, get, list, patch,
replace, delete, load, ...) are thread-safe: from another thread they run on that loop and wait.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import concurrent.futures
import copy
import json
import logging
import random
import threading
import traceback
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import aiohttp.web
from kmock import KubernetesScaffold
from kmock import resource as kmock_resource
from kmock._internal import dsl, enums, rendering

from . import podlogs
from .crds import KARPENTER_RESOURCES, scheduler_resources
from .disruption import DisruptionController
from .emulator_watch import CLOSE, EXPIRE, WatchStream
from .ocm import OcmMachinePools
from .resources import (
    BUILTIN_RESOURCES,
    ApiError,
    ResourceType,
    api_group,
    group_versions,
    resource_list,
    status_body,
    version_info,
)
from .selectors import FieldSelector, LabelSelector, SelectorError
from .store import Key, Listener, ObjectStore, ObjKey, delete_options

log = logging.getLogger("kubesim")

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> aiohttp.web.Response:
    return aiohttp.web.Response(
        body=_dumps(body).encode(), status=status, headers=headers, content_type="application/json"
    )


class _Route:
    __slots__ = ("group", "version", "namespace", "plural", "name", "sub", "verb")

    def __init__(
        self,
        group: str,
        version: str,
        namespace: str | None,
        plural: str | None,
        name: str | None,
        sub: str | None,
        verb: str,
    ) -> None:
        self.group, self.version, self.namespace = group, version, namespace
        self.plural, self.name, self.sub, self.verb = plural, name, sub, verb


def parse_route(method: str, path: str, query: dict[str, str]) -> _Route | None:
    """Split a resource URL; None for non-resource paths (discovery, /version, ...)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
    sub = "/".join(rest[2:]) or None
    watch = query.get("watch", "").lower() in ("true", "1")
    verb = {
        ("GET", False): "watch" if watch else "list",
        ("GET", True): "watch" if watch else "get",
        ("POST", False): "create",
        ("POST", True): "create",
        ("PUT", True): "update",
        ("PATCH", True): "patch",
        ("DELETE", True): "delete",
        ("DELETE", False): "deletecollection",
    }.get((method, name is not None), "unsupported")
    return _Route(group, version, namespace, plural, name, sub, verb)


_KMOCK_ACTIONS = {
    "list": enums.action.LIST,
    "watch": enums.action.WATCH,
    "get": enums.action.FETCH,
    "create": enums.action.CREATE,
    "patch": enums.action.UPDATE,
    "update": enums.action.UPDATE,
    "delete": enums.action.DELETE,
    "deletecollection": enums.action.DELETE,
}


class _Failure:
    __slots__ = ("verb", "resource", "status", "times", "reason", "message", "retry_after")

    def __init__(
        self,
        verb: str,
        resource: str,
        status: int,
        times: int | None,
        reason: str | None,
        message: str | None,
        retry_after: int | None,
    ) -> None:
        self.verb, self.resource, self.status, self.times = verb, resource, status, times
        self.reason, self.message, self.retry_after = reason, message, retry_after


class KubeEmulator(OcmMachinePools, ObjectStore, KubernetesScaffold):
    """See the module docstring. Construct, then serve it with :class:`kubesim.EmulatorServer`."""

    def __init__(
        self,
        *,
        git_version: str = "v1.33.0",
        history_size: int = 10_000,
        request_log_size: int = 256,
        max_list_snapshots: int = 64,
        watch_max_seconds: float = 1800.0,
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        schedulers: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.git_version = git_version
        self.history_size = history_size
        self.request_log_size = max(1, request_log_size)
        self.max_list_snapshots = max_list_snapshots
        self.watch_max_seconds = watch_max_seconds
        self.internal_errors: collections.deque[str] = collections.deque(maxlen=100)
        self._types: dict[Key, ResourceType] = {}
        self._store: dict[Key, dict[ObjKey, dict]] = {}
        self._history: dict[Key, collections.deque] = {}
        self._floor: dict[Key, int] = {}
        self._watchers: dict[Key, set[WatchStream]] = {}
        self._order: dict[Key, list[ObjKey] | None] = {}
        self._snapshots: collections.OrderedDict[str, tuple[Any, int, list[dict]]] = collections.OrderedDict()
        self._failures: list[_Failure] = []
        self._failures_lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._rv = 0
        self._request_id = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._random = random.Random()
        self._init_ocm()  # OpenShift Cluster Manager machine pools (kubesim.ocm)
        for rt in (*BUILTIN_RESOURCES, *KARPENTER_RESOURCES, *scheduler_resources(schedulers)):
            self._register(rt)
        for ns in namespaces:
            self._create(self._types["", "namespaces"], None, {"metadata": {"name": ns}})
        self.disruption = DisruptionController(self)  # PodDisruptionBudgets' status, the Eviction API
        self.volume_files: dict = {}  # what containers wrote on their volumes (kubesim.volumes)
        # pod uid -> {container name, or (name, "preStop"): what it printed as it ran} (kubesim.kubelet)
        self.container_outputs: dict[str, dict] = {}

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._payloads.clear()  # kmock's own fallbacks are replaced by our dispatcher

    # ----------------------------------------------------------------- threading helpers
    def bind_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Called by the server: state is then only touched on ``loop``'s thread."""
        self._loop = loop
        self._loop_thread = threading.get_ident() if loop is not None else None

    def run_in_loop(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` on the serving loop (directly if already there or not serving) and return its result."""
        loop = self._loop
        if loop is None or not loop.is_running() or threading.get_ident() == self._loop_thread:
            return fn(*args, **kwargs)
        future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return future.result(timeout=60)

    # ----------------------------------------------------------------- public, thread-safe API
    @property
    def resource_version(self) -> int:
        return self._rv

    def add_resource(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        namespaced: bool = True,
        subresources: tuple[str, ...] = ("status",),
        short_names: tuple[str, ...] = (),
    ) -> ResourceType:
        """Serve another resource (e.g. a CRD):
        ``add_resource("scheduling.run.ai", "v2", "queues", "Queue", False)``."""
        rt = ResourceType(group, version, plural, kind, namespaced, kind.lower(), short_names, subresources)
        self.run_in_loop(self._register, rt)
        return rt

    def serve_schedulers(self, *names: str) -> list[ResourceType]:
        """Serve the custom resources of quota schedulers (``"kai"``, ``"kueue"``; see kubesim.crds)."""
        types = scheduler_resources(names)
        for rt in types:
            self.run_in_loop(self._register, rt)
        return types

    def set_status(self, plural: str, name: str, status: dict, namespace: str | None = None) -> dict:
        """Write an object's ``status`` as its controller would (the status subresource, replaced whole)."""
        rt = self.resource_type(plural)
        obj = self.get(plural, name, namespace)
        if obj is None:
            raise KeyError(f"no {plural} named {name!r}")
        return copy.deepcopy(self.run_in_loop(self._update, rt, namespace, name, {**obj, "status": status}, "status"))

    def add_listener(self, fn: Listener) -> None:
        """``fn(event_type, resource_type, old, new)`` runs on the loop after every change."""
        self._listeners.append(fn)

    def remove_listener(self, fn: Listener) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def create(self, plural: str, obj: dict, namespace: str | None = None) -> dict:
        return copy.deepcopy(self.run_in_loop(self._create, self.resource_type(plural), namespace, obj))

    def get(self, plural: str, name: str, namespace: str | None = None) -> dict | None:
        rt = self.resource_type(plural)
        return copy.deepcopy(self.run_in_loop(self._store[rt.key].get, (namespace or "", name)))

    def list(
        self, plural: str, namespace: str | None = None, label_selector: str = "", field_selector: str = ""
    ) -> list[dict]:
        rt = self.resource_type(plural)
        items = self.run_in_loop(
            self._select,
            rt,
            namespace,
            None,
            LabelSelector.parse(label_selector),
            FieldSelector.parse(field_selector, rt.group, rt.plural),
        )
        return copy.deepcopy(items)

    def patch(
        self, plural: str, name: str, patch: dict, namespace: str | None = None, subresource: str | None = None
    ) -> dict:
        rt = self.resource_type(plural)
        return copy.deepcopy(self.run_in_loop(self._patch, rt, namespace, name, patch, "merge", subresource))

    def replace(
        self, plural: str, name: str, obj: dict, namespace: str | None = None, subresource: str | None = None
    ) -> dict:
        rt = self.resource_type(plural)
        return copy.deepcopy(self.run_in_loop(self._update, rt, namespace, name, obj, subresource))

    def delete(self, plural: str, name: str, namespace: str | None = None) -> dict:
        return copy.deepcopy(self.run_in_loop(self._delete, self.resource_type(plural), namespace, name, None))

    def load(self, plural: str, objs: Iterable[dict]) -> int:
        """Insert many objects directly (no HTTP, no validation); existing names are replaced.

        The dicts are adopted (only ``metadata`` is copied): do not mutate them afterwards.
        """
        return self.run_in_loop(self._load, self.resource_type(plural), list(objs))

    def fail_next(
        self,
        verb: str,
        resource: str,
        status: int = 503,
        times: int | None = 1,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests (None: all) with an error ``Status``.

        ``verb``: get, list, watch, create, update, patch, delete, deletecollection or ``*``;
        ``resource``: a plural (``nodes``), ``plural/subresource`` (``pods/status``) or ``*``.
        """
        with self._failures_lock:
            self._failures.append(_Failure(verb, resource, status, times, reason, message, retry_after))

    def clear_failures(self) -> None:
        with self._failures_lock:
            self._failures.clear()

    def compact(self) -> None:
        """Forget all watch history and list snapshots, like an etcd compaction.

        Afterwards, watching from any older resourceVersion gets 410 Expired, and continue
        tokens issued earlier get 410.
        """

        def run() -> None:
            for key, hist in self._history.items():
                hist.clear()
                self._floor[key] = self._rv
            self._snapshots.clear()

        self.run_in_loop(run)

    def expire_watches(self, plural: str | None = None) -> int:
        """Send a 410 Expired ERROR event to open watches (of ``plural`` or all) and end them."""
        return self.run_in_loop(self._signal_watches, plural, EXPIRE)

    def close_watches(self, plural: str | None = None) -> int:
        """End open watch streams cleanly, as an apiserver timeout does."""
        return self.run_in_loop(self._signal_watches, plural, CLOSE)

    def watch_count(self, plural: str | None = None) -> int:
        keys = [self.resource_type(plural).key] if plural else list(self._watchers)
        return sum(len(self._watchers.get(k, ())) for k in keys)

    def clear_request_log(self) -> None:
        self._requests.clear()

    def resource_type(self, plural: str) -> ResourceType:
        """Look a type up by ``plural``, ``group/plural``, ``group/version/plural`` or ``plural.group``."""
        parts = plural.split("/")
        if len(parts) == 1 and "." in plural:
            name, _, group = plural.partition(".")
            parts = [group, name]
        group = "" if len(parts) == 1 or parts[0] == "v1" else parts[0]
        rt = self._types.get((group, parts[-1]))
        if rt is None:
            raise KeyError(f"unknown resource {plural!r}")
        return rt

    # ----------------------------------------------------------------- HTTP
    async def __call__(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        try:
            body = await raw.read()
            query = dict(raw.query)
            ocm = self.serves_ocm(raw.path)
            route = None if ocm else parse_route(raw.method, raw.path, query)
            data: Any = None
            if body:
                try:
                    data = json.loads(body)
                except ValueError:
                    if raw.method in ("POST", "PUT", "PATCH"):
                        raise ApiError(400, "the body of the request could not be decoded as JSON") from None
            self._request_id += 1
            request = rendering.Request(
                id=self._request_id,
                raw_request=raw,
                url=raw.url,
                method=raw.method,
                params=query,
                headers=dict(raw.headers),
                body=body,
                text=body.decode("utf-8", "replace"),
                data=data,
                action=_KMOCK_ACTIONS.get(route.verb) if route else None,
                resource=kmock_resource(route.group, route.version, route.plural) if route else None,
                namespace=route.namespace if route else None,
                name=route.name if route else None,
                subresource=route.sub if route else None,
            )
            if len(self._requests) >= self.request_log_size:
                del self._requests[: len(self._requests) - self.request_log_size + 1]
            self._requests.append(request)
            failure = self._take_failure(route)
            if failure is not None:
                raise failure
            if self._payloads:
                response = await self._user_reaction(request)
                if response is not None:
                    return response
            if ocm:
                return self.serve_ocm(raw.method, raw.path, dict(raw.headers), data)
            if route is None:
                return self._serve_discovery(raw.path)
            return await self._serve_resource(raw, route, query, data)
        except ApiError as exc:
            return _json(exc.status(), exc.code, exc.headers)
        except rendering.StreamingError as exc:  # a kmock user stream failed after its headers
            return exc.args[0]
        except Exception as exc:
            log.exception("kubesim: internal error")
            self.internal_errors.append(traceback.format_exc())
            return _json(status_body(500, repr(exc), "InternalError"), 500)

    def _take_failure(self, route: _Route | None) -> ApiError | None:
        if not self._failures or route is None:
            return None
        target = f"{route.plural}/{route.sub}" if route.sub else route.plural
        with self._failures_lock:
            for failure in self._failures:
                if failure.verb in ("*", route.verb) and failure.resource in ("*", target):
                    if failure.times is not None:
                        failure.times -= 1
                        if failure.times <= 0:
                            self._failures.remove(failure)
                    headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after else None
                    return ApiError(
                        failure.status,
                        failure.message or f"injected failure for {route.verb} {target}",
                        failure.reason,
                        headers=headers,
                    )
        return None

    async def _user_reaction(self, request: rendering.Request) -> aiohttp.web.StreamResponse | None:
        # As in kmock's RawHandler._handle, but falling through to our dispatcher on no match.
        priorities = [payload.priorities for payload in self._payloads]
        width = max(len(p) for p in priorities)
        ordered = sorted(
            zip(priorities, range(len(priorities)), self._payloads, strict=True),
            key=lambda t: (tuple(-p for p in t[0]) + (0,) * (width - len(t[0])), t[1]),
        )
        for _, _, payload in ordered:
            if not payload._disabled.is_set() and self._sees(payload._source, request):
                try:
                    return await payload(request)
                except rendering.ReactionMismatchError:
                    payload._disabled.set()
                except NotImplementedError:
                    pass
        return None

    def _sees(self, view: dsl.View, request: rendering.Request) -> bool:
        """``request in view``; O(1) for plain filter chains, else kmock's scan of the request log."""
        source = view
        while isinstance(source, (dsl.Filter, dsl.Priority)):
            if isinstance(source, dsl.Filter) and not source.criteria(request):
                return False
            source = source._source
        if source is self:
            return True
        return request in view

    def _serve_discovery(self, path: str) -> aiohttp.web.StreamResponse:
        path = "/" + path.strip("/")
        groups = group_versions(self._types.values())
        if path == "/version":
            return _json(version_info(self.git_version))
        if path in ("/healthz", "/livez", "/readyz"):
            return aiohttp.web.Response(text="ok")
        if path == "/api":
            return _json(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
                }
            )
        if path == "/api/v1":
            return _json(resource_list("", "v1", [t for t in self._types.values() if not t.group]))
        if path == "/apis":
            return _json(
                {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(g, vs) for g, vs in groups.items()]}
            )
        parts = path.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2 and parts[1] in groups:
            return _json(api_group(parts[1], groups[parts[1]]))
        if parts[0] == "apis" and len(parts) == 3 and parts[2] in groups.get(parts[1], ()):
            return _json(
                resource_list(
                    parts[1],
                    parts[2],
                    [t for t in self._types.values() if t.group == parts[1] and t.version == parts[2]],
                )
            )
        if path == "/":
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
            paths += [f"/apis/{g}" for g in groups] + [f"/apis/{g}/{v}" for g, vs in groups.items() for v in vs]
            return _json({"paths": sorted(paths)})
        raise ApiError(404, "the server could not find the requested resource")

    async def _serve_resource(
        self, raw: aiohttp.web.BaseRequest, route: _Route, query: dict[str, str], data: Any
    ) -> aiohttp.web.StreamResponse:
        rt = self._types.get((route.group, route.plural))
        if rt is None or rt.version != route.version or (route.namespace is not None and not rt.namespaced):
            raise ApiError(404, "the server could not find the requested resource")
        if route.sub is not None and route.sub not in rt.subresources:
            raise ApiError(404, "the server could not find the requested resource")
        ns, name, verb, sub = route.namespace, route.name, route.verb, route.sub
        if verb in ("list", "watch", "deletecollection"):
            try:
                labels = LabelSelector.parse(query.get("labelSelector"))
                fields = FieldSelector.parse(query.get("fieldSelector"), rt.group, rt.plural)
            except SelectorError as exc:
                raise ApiError(400, str(exc)) from None
            if verb == "watch":
                stream = WatchStream(self, rt, ns, name, labels, fields)
                return await stream.serve(raw, query)
            if verb == "list":
                return _json(self._list_page(rt, ns, labels, fields, query))
            for obj in self._select(rt, ns, None, labels, fields):
                self._delete(rt, ns, obj["metadata"]["name"], None)
            return _json(status_body(200))
        if sub == "log" and verb == "get":  # a training loop's output (kubesim.podlogs)
            pod, log_query = self._get(rt, ns, name), podlogs.LogQuery.parse(query)
            outputs = self.container_outputs
            if log_query.follow:
                current = lambda: self._store[rt.key].get((ns or "", name))  # noqa: E731
                return await podlogs.follow(raw, pod, log_query, current, outputs)
            return aiohttp.web.Response(text=podlogs.log_text(pod, log_query, outputs=outputs))
        if verb == "get":
            return _json(self._get(rt, ns, name))
        if verb == "create" and sub == "binding":
            return _json(self._bind(ns, name, data), 201)
        if verb == "create" and sub == "eviction":
            return _json(self.disruption.evict(ns or "", name, data), 201)
        if verb == "create" and name is None:
            if rt.namespaced and ns is None:  # the all-namespaces path of a namespaced kind only lists and watches
                raise ApiError(405, "the server does not allow this method on the requested resource")
            return _json(self._create(rt, ns, data), 201)
        if verb == "update" and sub in (None, "status"):
            return _json(self._update(rt, ns, name, data, sub))
        if verb == "patch" and sub in (None, "status"):
            ctype = raw.headers.get("Content-Type", "")
            return _json(self._patch(rt, ns, name, data, "json" if "json-patch" in ctype else "merge", sub))
        if verb == "delete" and sub is None:
            return _json(self._delete(rt, ns, name, delete_options(data, query)))
        raise ApiError(405, f"the server does not allow this method on the requested resource ({verb})")

    def _list_page(
        self, rt: ResourceType, ns: str | None, labels: LabelSelector, fields: FieldSelector, query: dict[str, str]
    ) -> dict:
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise ApiError(400, f"invalid limit: {query.get('limit')!r}") from None
        token = query.get("continue")
        if token:
            try:
                snap_id, start = json.loads(base64.urlsafe_b64decode(token.encode()))["s"].split(":")
                key, rv, items = self._snapshots[snap_id]
                start = int(start)
                if key != (rt.key, ns):
                    raise KeyError(snap_id)
            except Exception:
                raise ApiError(
                    410,
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter.",
                    "Expired",
                ) from None
            self._snapshots.move_to_end(snap_id)
        else:
            snap_id, start, rv, items = uuid.uuid4().hex, 0, self._rv, self._select(rt, ns, None, labels, fields)
        end = start + limit if limit > 0 else len(items)
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if end < len(items):  # snapshots stay until evicted (LRU) or compacted, so pages can be retried
            self._snapshots[snap_id] = ((rt.key, ns), rv, items)
            while len(self._snapshots) > self.max_list_snapshots:
                self._snapshots.popitem(last=False)
            raw_token = _dumps({"s": f"{snap_id}:{end}", "rv": rv}).encode()
            metadata["continue"] = base64.urlsafe_b64encode(raw_token).decode()
            metadata["remainingItemCount"] = len(items) - end
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": metadata, "items": items[start:end]}
