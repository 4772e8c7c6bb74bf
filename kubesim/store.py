"""The object store behind KubeEmulator: versioned objects, history, watchers, write semantics.

A mixin: KubeEmulator owns the state attributes (see its ``__init__``); every method here runs on
the serving loop's thread (or before the loop starts) and is synchronous, hence atomic.
Stored objects are never mutated in place: writes build new dicts that share untouched parts.
"""

from __future__ import annotations

import collections
import logging
import random
import time
import traceback
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .crds import validate
from .patching import PatchError, json_patch, merge_patch
from .registries import validate_secret
from .resources import BUILTIN_RESOURCES, ApiError, ResourceType, not_found, status_body
from .selectors import FieldSelector, LabelSelector
from .services import SERVICES, validate_pod_dns, validate_service

if TYPE_CHECKING:
    from .emulator_watch import WatchStream

log = logging.getLogger("kubesim")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
SECRETS = ("", "secrets")
PODS = ("", "pods")
Key = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace or "", name)
Listener = Callable[[str, ResourceType, "dict | None", dict], None]


def delete_options(body: Any, query: dict[str, str]) -> Any:
    """A delete's DeleteOptions: the body, with ``gracePeriodSeconds`` given as a query parameter (the official
    client's ``grace_period_seconds``) taking its place there."""
    if not query.get("gracePeriodSeconds", "").lstrip("-").isdigit():
        return body
    return {**(body if isinstance(body, dict) else {}), "gracePeriodSeconds": int(query["gracePeriodSeconds"])}


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class ObjectStore:
    history_size: int
    internal_errors: collections.deque[str]
    _types: dict[Key, ResourceType]
    _store: dict[Key, dict[ObjKey, dict]]
    _history: dict[Key, collections.deque]
    _floor: dict[Key, int]
    _watchers: dict[Key, set[WatchStream]]
    _order: dict[Key, list[ObjKey] | None]
    _snapshots: collections.OrderedDict[str, tuple[Any, int, list[dict]]]
    _listeners: list[Listener]
    _rv: int
    _random: random.Random
    # The kubelet's graceful termination (kubesim.kubelet): given a pod being deleted and the DeleteOptions'
    # gracePeriodSeconds, marks it Terminating and returns it, or None for a pod that may go at once.
    pod_terminator: Callable[[dict, Any], dict | None] | None = None

    def resource_type(self, plural: str) -> ResourceType:  # provided by KubeEmulator
        raise NotImplementedError

    def _register(self, rt: ResourceType) -> None:
        self._types[rt.key] = rt
        self._store.setdefault(rt.key, {})
        self._history.setdefault(rt.key, collections.deque(maxlen=self.history_size))
        self._floor.setdefault(rt.key, self._rv)
        self._watchers.setdefault(rt.key, set())

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _emit(self, rt: ResourceType, etype: str, old: dict | None, new: dict) -> None:
        hist = self._history[rt.key]
        if hist.maxlen and len(hist) == hist.maxlen:
            self._floor[rt.key] = hist[0][0]
        hist.append((self._rv, etype, old, new))
        for watcher in list(self._watchers[rt.key]):
            watcher.offer(etype, old, new)
        for listener in list(self._listeners):
            try:
                listener(etype, rt, old, new)
            except Exception:  # a broken listener must not break the API
                log.exception("kubesim listener failed")
                self.internal_errors.append(traceback.format_exc())

    def _select(
        self, rt: ResourceType, namespace: str | None, name: str | None, labels: LabelSelector, fields: FieldSelector
    ) -> list[dict]:
        bucket = self._store[rt.key]
        if name is not None:
            obj = bucket.get((namespace or "", name))
            objs = [obj] if obj is not None else []
        else:
            order = self._order.get(rt.key)
            if order is None:  # (namespace, name) order, as etcd lists; rebuilt after adds/removes
                order = self._order[rt.key] = sorted(bucket)
            objs = [bucket[k] for k in order] if namespace is None else [bucket[k] for k in order if k[0] == namespace]
        if labels or fields:
            objs = [
                obj
                for obj in objs
                if (not labels or labels.matches(obj["metadata"].get("labels"))) and (not fields or fields.matches(obj))
            ]
        return objs

    def _namespace_of(self, rt: ResourceType, namespace: str | None, body: dict | None) -> str:
        if not rt.namespaced:
            return ""
        body_ns = ((body or {}).get("metadata") or {}).get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
        return namespace or body_ns or "default"

    def _stamp(self, rt: ResourceType, ns: str, obj: dict, meta: dict) -> dict:
        if "uid" not in meta:
            meta["uid"] = str(uuid.uuid4())
        if "creationTimestamp" not in meta:
            meta["creationTimestamp"] = now_rfc3339()
        meta.setdefault("generation", 1)
        if rt.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["resourceVersion"] = self._next_rv()
        obj["metadata"] = meta
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        return obj

    def _create(self, rt: ResourceType, namespace: str | None, body: Any, *, loading: bool = False) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request was in an unknown format")
        if body.get("kind") not in (None, rt.kind):
            raise ApiError(400, f"the kind in the data ({body['kind']}) does not match the expected kind ({rt.kind})")
        meta = dict(body.get("metadata") or {})
        ns = self._namespace_of(rt, namespace, body)
        if ns and ("", ns) not in self._store["", "namespaces"]:
            if not loading:
                raise not_found(self._types["", "namespaces"], ns)
            self._create(self._types["", "namespaces"], None, {"metadata": {"name": ns}})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(
                    422,
                    f"{rt.kind}.{rt.api_version} is invalid: metadata.name: Required value: "
                    "name or generateName is required",
                    "Invalid",
                )
            while True:
                meta["name"] = meta["generateName"] + "".join(self._random.choices(_NAME_CHARS, k=5))
                if (ns, meta["name"]) not in self._store[rt.key]:
                    break
        key = (ns, meta["name"])
        old = self._store[rt.key].get(key)
        if old is not None and not loading:
            kind_plural = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            raise ApiError(
                409,
                f'{kind_plural} "{meta["name"]}" already exists',
                "AlreadyExists",
                {"name": meta["name"], "group": rt.group, "kind": rt.plural},
            )
        for transient in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(transient, None)
        if old is not None:
            meta["uid"] = old["metadata"]["uid"]
        if not loading:
            validate(rt, body)
            _validate_core(rt, body)
        obj = self._stamp(rt, ns, dict(body), meta)
        if not loading:
            self._defaults(rt, obj)
        self._store[rt.key][key] = obj
        if old is None:
            self._order[rt.key] = None
        self._emit(rt, "MODIFIED" if old is not None else "ADDED", old, obj)
        return obj

    def _defaults(self, rt: ResourceType, obj: dict) -> None:
        """The little defaulting a real apiserver does on create that clients rely upon."""
        if rt.key == ("", "pods"):
            spec = obj["spec"] = dict(obj.get("spec") or {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("priority", 0)
            obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
        elif rt.key == ("", "namespaces"):
            meta = obj["metadata"]
            meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        elif rt.key == ("policy", "poddisruptionbudgets"):
            obj.pop("status", None)  # the disruption controller's (kubesim.disruption)
        elif rt not in BUILTIN_RESOURCES and "status" in rt.subresources:
            obj.pop("status", None)  # CRDs with a status subresource drop status on create

    def _load(self, rt: ResourceType, objs: list[dict]) -> int:
        for obj in objs:
            self._create(rt, None, obj, loading=True)
        return len(objs)

    def _get(self, rt: ResourceType, namespace: str | None, name: str) -> dict:
        obj = self._store[rt.key].get((namespace or "" if rt.namespaced else "", name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def _check_rv(self, rt: ResourceType, old: dict, body: Any) -> None:
        want = ((body or {}).get("metadata") or {}).get("resourceVersion") if isinstance(body, dict) else None
        if want and want != old["metadata"]["resourceVersion"]:
            kind_plural = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            raise ApiError(
                409,
                f'Operation cannot be fulfilled on {kind_plural} "{old["metadata"]["name"]}": '
                "the object has been modified; please apply your changes to the latest "
                "version and try again",
                "Conflict",
                {"name": old["metadata"]["name"], "group": rt.group, "kind": rt.plural},
            )

    def _update(self, rt: ResourceType, namespace: str | None, name: str, body: Any, subresource: str | None) -> dict:
        old = self._get(rt, namespace, name)
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request was in an unknown format")
        if (body.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "the name of the object does not match the name on the URL")
        self._check_rv(rt, old, body)
        if subresource == "status":
            new = {**old, "status": body.get("status")}
        else:
            new = dict(body)
            if "status" in rt.subresources:
                new["status"] = old.get("status")
        return self._commit(rt, old, new, subresource)

    def _patch(
        self, rt: ResourceType, namespace: str | None, name: str, body: Any, mode: str, subresource: str | None
    ) -> dict:
        old = self._get(rt, namespace, name)
        try:
            patched = json_patch(old, body) if mode == "json" else merge_patch(old, body)
        except PatchError as exc:
            raise ApiError(422, str(exc), "Invalid") from None
        if mode != "json":
            self._check_rv(rt, old, body)
        if subresource == "status":
            new = {**old, "status": patched.get("status")}
        else:
            new = patched
            if "status" in rt.subresources:
                new["status"] = old.get("status")
        return self._commit(rt, old, new, subresource)

    def _commit(self, rt: ResourceType, old: dict, new: dict, subresource: str | None) -> dict:
        """Store a changed object: keep identity fields, bump versions, release on last finalizer."""
        old_meta = old["metadata"]
        meta = dict(new.get("metadata") or {}) if subresource != "status" else dict(old_meta)
        for field in (
            "uid",
            "creationTimestamp",
            "name",
            "namespace",
            "resourceVersion",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        new = {**new, "metadata": meta, "apiVersion": rt.api_version, "kind": rt.kind}
        if new.get("status") is None:
            new.pop("status", None)
        if new == old:
            return old  # a no-op write does not bump the resourceVersion
        if subresource is None:
            validate(rt, new)
            _validate_core(rt, new)
        if subresource is None and new.get("spec") != old.get("spec"):
            meta["generation"] = int(old_meta.get("generation") or 1) + 1
        meta["resourceVersion"] = self._next_rv()
        key = (meta.get("namespace", ""), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self._store[rt.key][key]
            self._order[rt.key] = None
            self._emit(rt, "DELETED", old, new)
        else:
            self._store[rt.key][key] = new
            self._emit(rt, "MODIFIED", old, new)
        return new

    def _delete(self, rt: ResourceType, namespace: str | None, name: str, options: Any) -> dict:
        old = self._get(rt, namespace, name)
        meta = old["metadata"]
        pre = (options or {}).get("preconditions") or {} if isinstance(options, dict) else {}
        if (pre.get("uid") and pre["uid"] != meta["uid"]) or (
            pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]
        ):
            raise ApiError(
                409,
                f"Precondition failed: UID in precondition: {pre.get('uid')}, UID in object meta: {meta['uid']}",
                "Conflict",
            )
        grace = (options or {}).get("gracePeriodSeconds") if isinstance(options, dict) else None
        if meta.get("deletionTimestamp"):
            if rt.key == PODS and grace == 0 and not meta.get("finalizers"):
                return self._remove(rt, (meta.get("namespace", ""), name))  # a force delete ends the grace period
            return old
        if rt.key == PODS and self.pod_terminator is not None and not meta.get("finalizers"):
            terminating = self.pod_terminator(old, grace)
            if terminating is not None:
                return terminating
        if meta.get("finalizers"):
            marked = {**old, "metadata": {**meta, "deletionTimestamp": now_rfc3339(), "deletionGracePeriodSeconds": 0}}
            marked["metadata"]["resourceVersion"] = self._next_rv()
            self._store[rt.key][(meta.get("namespace", ""), name)] = marked
            self._emit(rt, "MODIFIED", old, marked)
            return marked
        if rt.key == ("", "namespaces"):  # simplification: contents go at once
            for other in self._types.values():
                if other.namespaced:
                    for obj_ns, obj_name in [k for k in self._store[other.key] if k[0] == name]:
                        self._remove(other, (obj_ns, obj_name))
        return self._remove(rt, (meta.get("namespace", ""), name))

    def _remove(self, rt: ResourceType, key: ObjKey) -> dict:
        old = self._store[rt.key].pop(key)
        self._order[rt.key] = None
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": self._next_rv()}}
        self._emit(rt, "DELETED", old, gone)
        return gone

    def _bind(self, namespace: str | None, name: str, body: Any) -> dict:
        rt = self._types["", "pods"]
        pod = self._get(rt, namespace, name)
        node = ((body or {}).get("target") or {}).get("name") if isinstance(body, dict) else None
        if not node:
            raise ApiError(422, "Binding target.name: Required value", "Invalid")
        if (pod.get("spec") or {}).get("nodeName"):
            raise ApiError(409, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"', "Conflict")
        self._commit(rt, pod, {**pod, "spec": {**pod["spec"], "nodeName": node}}, None)
        return status_body(201)

    def _signal_watches(self, plural: str | None, signal: object) -> int:
        keys = [self.resource_type(plural).key] if plural else list(self._watchers)
        count = 0
        for key in keys:
            for watcher in list(self._watchers[key]):
                watcher.queue.put_nowait(signal)
                count += 1
        return count


def _validate_core(rt: ResourceType, obj: dict) -> None:
    """The API server's validation of the core kinds kubesim checks: Secrets, Services, pods' DNS names."""
    if rt.key == SECRETS:
        validate_secret(obj)
    elif rt.key == SERVICES:
        validate_service(obj)
    elif rt.key == ("", "pods"):
        validate_pod_dns(obj)


def _qos_class(spec: dict) -> str:
    containers = spec.get("containers") or []
    requests_any, guaranteed = False, bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests_any = requests_any or bool(req) or bool(lim)
        for r in ("cpu", "memory"):
            if r not in lim or req.get(r, lim[r]) != lim[r]:
                guaranteed = False
    return "Guaranteed" if guaranteed else ("Burstable" if requests_any else "BestEffort")
