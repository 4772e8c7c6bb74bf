"""Workflow pods in a cluster: create (idempotently), read, delete, list and watch by label, and the plain
status the workflow lifecycle needs (`pod_state`).

* `create_pod`: POST the manifest as given. A missing namespace is created (once) and the POST
  repeated. `409 AlreadyExists` is success when the existing pod carries our ownership labels
  (`OWNER_LABELS`: workflow, task and portal instance): it is read back and returned with
  `created=False`. Someone else's pod of that name raises `PodConflict` (not transient).
* `delete_pod`: 404 is success (already gone); returns whether a pod was there.
* `list_pods` / `watch_pods`: by label selector (the portal's instance label), in one namespace or all;
  paginated lists; a watch that the server expires (410) raises KubeError with `gone` set: list again.
* `pod_state`: phase, node, exit code, start/finish times, why it is not scheduled or not running,
  as plain values (UTC datetimes), from a raw pod dict.

Every failure is a `KubeError` (`clusters.kube.errors`): `transient` for network errors, 429 and 5xx.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from clusters.kube.connection import KubeClient
from clusters.kube.errors import KubeError
from clusters.kube.node_pod_lists import WatchStream

INSTANCE_LABEL = "pool-portal/instance"
WORKFLOW_LABEL = "pool-portal/workflow"
TASK_LABEL = "pool-portal/task"
OWNER_LABELS = (WORKFLOW_LABEL, TASK_LABEL, INSTANCE_LABEL)
MANAGED_BY = {"app.kubernetes.io/managed-by": "pool-portal"}
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
PAGE_SIZE = 500
WATCH_SECONDS = 300


class PodConflict(KubeError):
    """A pod of the name we need exists and is not ours (other labels): retrying will not help."""

    status = 409
    code = "pod_conflict"


@dataclass
class Created:
    pod: dict  # the pod as the server returned it (created now, or the one that already existed)
    created: bool


def owner_labels(manifest: dict) -> dict[str, str]:
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    return {key: labels.get(key) for key in OWNER_LABELS}


def is_owned(pod: dict, manifest: dict) -> bool:
    """Does `pod` carry the same ownership labels as `manifest` (all of them set)?"""
    wanted = owner_labels(manifest)
    return all(wanted.values()) and owner_labels(pod) == wanted


def create_pod(kube: KubeClient, namespace: str, manifest: dict) -> Created:
    name = (manifest.get("metadata") or {}).get("name", "")
    doing = f"creating pod {namespace}/{name}"
    for attempt in (1, 2):
        try:
            return Created(
                _post_json(kube, doing, "/api/v1/namespaces/{namespace}/pods", {"namespace": namespace}, manifest), True
            )
        except KubeError as error:
            if error.k8s_status == 404 and attempt == 1:  # a POST to the collection: the namespace is missing
                ensure_namespace(kube, namespace)
                continue
            if error.k8s_status != 409:
                raise
        existing = read_pod(kube, namespace, name)
        if existing is None:  # deleted between our POST and GET: try once more, else let the caller retry
            if attempt == 1:
                continue
            raise KubeError(
                f"{doing}: the pod exists and vanished while being read; try again", k8s_status=409, transient=True
            )
        if not is_owned(existing, manifest):
            found = {key: value for key, value in owner_labels(existing).items() if value}
            raise PodConflict(
                f"{doing}: a pod of that name already exists and is not this task's "
                f"(its labels: {json.dumps(found, sort_keys=True) if found else 'none of ours'})",
                k8s_status=409,
                field="pod_name",
                value=name,
            )
        return Created(existing, False)
    raise AssertionError("unreachable")


def _post_json(kube: KubeClient, doing: str, path: str, path_params: dict, body: dict) -> dict:
    """POST `body` as JSON exactly as given. The typed client method would first validate the dict against
    its models and refuse what the API server accepts, e.g. quantities as JSON numbers (`cpu: 0.5`,
    `nvidia.com/gpu: 1`), which the engine's typed substitution produces."""
    return json.loads(kube.raw(doing, "POST", path, path_params, body=body))


def ensure_namespace(kube: KubeClient, namespace: str) -> bool:
    """Create `namespace` if it does not exist; True when it was created now."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(MANAGED_BY)}}
    try:
        kube.json(f"creating namespace {namespace}", kube.core.create_namespace, body)
    except KubeError as error:
        if error.k8s_status == 409:
            return False
        raise
    return True


def post_namespaced(kube: KubeClient, doing: str, collection: str, namespace: str, manifest: dict) -> str | None:
    """POST `manifest` to a namespaced `collection` (a path with `{namespace}`), creating the namespace when the
    API says it is missing, then POSTing again; the answer's text, or None on `409 AlreadyExists`."""
    for attempt in (1, 2):
        try:
            return kube.raw(doing, "POST", collection, {"namespace": namespace}, body=manifest)
        except KubeError as error:
            if error.k8s_status == 404 and attempt == 1:  # a POST to the collection: the namespace is missing
                ensure_namespace(kube, namespace)
                continue
            if error.k8s_status == 409:
                return None
            raise
    raise KubeError(f"{doing}: the namespace vanished twice")  # pragma: no cover - a namespace deleted mid-write


def read_pod(kube: KubeClient, namespace: str, name: str) -> dict | None:
    try:
        return kube.json(f"reading pod {namespace}/{name}", kube.core.read_namespaced_pod, name, namespace)
    except KubeError as error:
        if error.k8s_status == 404:
            return None
        raise


def delete_pod(kube: KubeClient, namespace: str, name: str, *, grace_seconds: int | None = None) -> bool:
    """Delete (background propagation); False when there was no such pod."""
    body = {"propagationPolicy": "Background"}
    if grace_seconds is not None:
        body["gracePeriodSeconds"] = grace_seconds
    try:
        kube.json(f"deleting pod {namespace}/{name}", kube.core.delete_namespaced_pod, name, namespace, body=body)
    except KubeError as error:
        if error.k8s_status == 404:
            return False
        raise
    return True


@dataclass
class PodList:
    items: list[dict]
    resource_version: str
    listed_at: datetime | None = None  # set by callers that need to know when the listing began


def instance_selector(instance: str) -> str:
    return f"{INSTANCE_LABEL}={instance}"


def list_pods(
    kube: KubeClient, label_selector: str, namespace: str | None = None, page_size: int = PAGE_SIZE
) -> PodList:
    """Every pod matching `label_selector` (in `namespace`, or all), page by page; a 410 mid-list restarts once."""
    for attempt in (1, 2):
        try:
            return _list_once(kube, label_selector, namespace, page_size)
        except KubeError as error:
            if not (error.gone and attempt == 1):
                raise
    raise AssertionError("unreachable")


def _list_once(kube: KubeClient, label_selector: str, namespace: str | None, page_size: int) -> PodList:
    items: list[dict] = []
    token, version = None, ""
    while True:
        kwargs = {"label_selector": label_selector, "limit": page_size}
        if token:
            kwargs["_continue"] = token
        if namespace:
            body = kube.json(f"listing pods in {namespace}", kube.core.list_namespaced_pod, namespace, **kwargs)
        else:
            body = kube.json("listing pods", kube.core.list_pod_for_all_namespaces, **kwargs)
        items.extend(body.get("items") or ())
        metadata = body.get("metadata") or {}
        version = version or str(metadata.get("resourceVersion") or "")
        token = metadata.get("continue")
        if not token:
            return PodList(items, version)


def watch_pods(
    kube: KubeClient,
    label_selector: str,
    resource_version: str,
    *,
    namespace: str | None = None,
    timeout_seconds: int = WATCH_SECONDS,
    on_open: Callable[[], None] | None = None,
) -> WatchStream:
    """One watch request for pods matching `label_selector` (the inventory's WatchStream, narrowed)."""
    return WatchStream(
        kube,
        "pods",
        resource_version,
        timeout_seconds=timeout_seconds,
        on_open=on_open,
        label_selector=label_selector,
        namespace=namespace,
    )


# ------------------------------------------------------------------------------------------ status


@dataclass
class PodState:
    """What the lifecycle reads from a pod. Times are aware UTC datetimes or None."""

    namespace: str
    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    phase: str = "Pending"
    node: str = ""
    created_at: datetime | None = None
    deleting: bool = False
    unschedulable: str = ""  # "Unschedulable: 0/25 nodes are available: ..." while PodScheduled is False
    unschedulable_since: datetime | None = None  # PodScheduled=False's lastTransitionTime
    scheduled_at: datetime | None = None  # PodScheduled=True's lastTransitionTime (the binding)
    waiting: str = ""  # the user container's waiting reason, e.g. "ErrImagePull: ..."
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    reason: str = ""  # why it ended: the container's terminated reason, or the pod's (Evicted, ...)
    message: str = ""

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def running(self) -> bool:
        return self.phase == "Running"


def pod_state(raw: dict, container: str | None = None) -> PodState:
    """Plain status of a pod; `container` names the user container (else the first one reporting)."""
    metadata, spec, status = (raw.get(key) or {} for key in ("metadata", "spec", "status"))
    state = PodState(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        labels=dict(metadata.get("labels") or {}),
        phase=str(status.get("phase") or "Pending"),
        node=str(spec.get("nodeName") or ""),
        created_at=parse_time(metadata.get("creationTimestamp")),
        deleting=bool(metadata.get("deletionTimestamp")),
    )
    conditions = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    for condition in conditions:
        if condition.get("type") != "PodScheduled":
            continue
        if condition.get("status") == "False":
            reason, message = condition.get("reason") or "Unschedulable", condition.get("message") or ""
            state.unschedulable = f"{reason}: {message}" if message else reason
            state.unschedulable_since = parse_time(condition.get("lastTransitionTime"))
        elif condition.get("status") == "True":
            state.scheduled_at = parse_time(condition.get("lastTransitionTime"))
    user = _user_container(status.get("containerStatuses") or (), container)
    states = (user or {}).get("state") or {}
    running, terminated, waiting = states.get("running"), states.get("terminated"), states.get("waiting")
    state.started_at = parse_time((running or terminated or {}).get("startedAt")) or parse_time(status.get("startTime"))
    if state.phase == "Pending":
        state.started_at = None
    if waiting and waiting.get("reason") and waiting.get("reason") not in ("ContainerCreating", "PodInitializing"):
        state.waiting = f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    if terminated:
        code = terminated.get("exitCode")
        state.exit_code = int(code) if isinstance(code, int) or str(code).lstrip("-").isdigit() else None
        state.finished_at = parse_time(terminated.get("finishedAt"))
        state.reason = str(terminated.get("reason") or "")
        state.message = str(terminated.get("message") or "")
    if state.terminal and not state.reason:
        state.reason, state.message = str(status.get("reason") or ""), str(status.get("message") or "")
    if state.terminal and state.finished_at is None:  # no container ended (evicted, say): its last transition
        state.finished_at = max(
            filter(None, (parse_time(c.get("lastTransitionTime")) for c in conditions)), default=None
        )
    return state


def _user_container(statuses, container: str | None) -> dict | None:
    statuses = [s for s in statuses if isinstance(s, dict)]
    if container:
        for item in statuses:
            if item.get("name") == container:
                return item
    for item in statuses:  # a template may add containers; the first that ended badly speaks for the pod
        terminated = (item.get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode"):
            return item
    return statuses[0] if statuses else None


def parse_time(value: object) -> datetime | None:
    """RFC 3339 (`2026-01-02T03:04:05Z`, fractions and offsets allowed) -> aware UTC datetime."""
    if not value or not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
