"""Which nodes can a pod land on, and why not: kube-scheduler's Filter plugins, exactly, with reasons.

Evaluated (docs/scheduling-semantics.md §3): NodeName, NodeUnschedulable, TaintToleration, NodeAffinity
(nodeSelector AND required node affinity) and NodeResourcesFit (pod count first, then every requested
resource). Everything in NOT_EVALUATED is out of scope and must be shown as such, never as "fits".

Usage: parse the pod once with `prepare_pod`, keep nodes as `NodeInfo` (pre-parsed integers), then
`place(pod, nodes)`. With `check_resources=False` the same rules decide pool/platform membership
(selectors, affinity, taints and cordon only). The hot loop does dictionary lookups and integer
comparisons only; quantities and selectors are parsed before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pools.engine.errors import EngineError
from pools.engine.placement_affinity import (
    FILTER_EFFECTS,
    UNSCHEDULABLE_TAINT,
    RequiredAffinity,
    Toleration,
    compile_required_affinity,
    describe_taint,
    parse_node_selector,
    parse_tolerations,
    taint_tuple,
)
from pools.engine.placement_fit import (
    exact_pod_requests,
    fit_reasons,
    is_fit_resource,
    parse_allocatable,
    pod_requests,
    pod_spec,
    sum_requests,
    to_scheduler_units,
)

__all__ = [
    "FILTERS",
    "NOT_EVALUATED",
    "NodeInfo",
    "PodSpecView",
    "PreparedPod",
    "Verdict",
    "evaluate",
    "fits",
    "nodes_from_kubectl",
    "place",
    "place_each",
    "pod_requests",
    "prepare_pod",
]

NODE_NAME, NODE_UNSCHEDULABLE, TAINT_TOLERATION = "NodeName", "NodeUnschedulable", "TaintToleration"
NODE_AFFINITY, NODE_RESOURCES_FIT = "NodeAffinity", "NodeResourcesFit"
FILTERS = (NODE_NAME, NODE_UNSCHEDULABLE, TAINT_TOLERATION, NODE_AFFINITY, NODE_RESOURCES_FIT)

NOT_EVALUATED: tuple[str, ...] = (
    "inter-pod affinity/anti-affinity",
    "topology spread constraints",
    "volumes and zones (volume binding, volume limits, volume zone)",
    "host ports",
    "dynamic resource allocation (resource claims)",
    "node readiness conditions",
    "scheduling gates and scheduler name",
    "preemption",
)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_SHAPES: dict[tuple, tuple[int, tuple]] = {}
_ABSENT = object()  # a label the node does not have (distinct from any value)
_MEMO_LIMIT = 65_536  # per prepared pod; cleared when full


@dataclass
class NodeInfo:
    """A node as the scheduler sees it, pre-parsed. Treat as immutable once built (taints are indexed)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict] = field(default_factory=list)
    unschedulable: bool = False
    allocatable: dict[str, int] = field(default_factory=dict)  # cpu millicores, others base units, "pods"
    requested: dict[str, int] = field(default_factory=dict)  # summed requests of non-terminal pods
    pod_count: int = 0
    # Not a node yet: what an autoscaled machine pool with no node would add (its description). Such a node
    # is placed like any other; its verdict says it is would-be.
    would_be: str = ""
    hard_taints: tuple[tuple[str, str, str], ...] = field(init=False, repr=False, compare=False)
    # What the filters read besides the name and labels, with its hash: built at the first `place`.
    _shape: tuple[int, tuple] | None = field(default=None, init=False, repr=False, compare=False)
    _membership_shape: tuple[int, tuple] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # only NoSchedule/NoExecute taints filter; PreferNoSchedule only affects scoring
        if not all(isinstance(taint, dict) for taint in self.taints):
            raise EngineError(f"node {self.name}: every taint must be an object", field="spec.taints")
        self.hard_taints = tuple(t for t in map(taint_tuple, self.taints) if t[2] in FILTER_EFFECTS)

    def shape(self) -> tuple[int, tuple]:
        """(hash, shape): cordon, filtering taints, pod count, allocatable and requested."""
        if self._shape is None:
            shape = (
                self.unschedulable,
                self.hard_taints,
                self.pod_count,
                tuple(sorted(self.allocatable.items())),
                tuple(sorted(self.requested.items())),
            )
            self._shape = _interned(shape)
        return self._shape

    def membership_shape(self) -> tuple[int, tuple]:
        """(hash, shape) without resources: cordon and filtering taints."""
        if self._membership_shape is None:
            shape = (self.unschedulable, self.hard_taints)
            self._membership_shape = _interned(shape)
        return self._membership_shape

    @classmethod
    def from_k8s(cls, node: dict, pods: Iterable[dict] = ()) -> NodeInfo:
        """From a `kubectl get node -o json` item and the pods bound to it (Succeeded/Failed are skipped)."""
        if not isinstance(node, dict):
            raise EngineError("a node must be an object", field="", value=type(node).__name__)
        metadata, spec, status = (node.get(key) or {} for key in ("metadata", "spec", "status"))
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise EngineError("node has no metadata.name", field="metadata.name", value=name)
        try:
            allocatable = parse_allocatable(status.get("allocatable"), "status.allocatable")
        except EngineError as error:
            raise EngineError(f"node {name}: {error.reason}", field=error.field, value=error.value) from None
        active = [pod for pod in pods if _phase(pod) not in TERMINAL_PHASES]
        return cls(
            name=name,
            labels=dict(metadata.get("labels") or {}),
            taints=list(spec.get("taints") or []),
            unschedulable=bool(spec.get("unschedulable")),
            allocatable=allocatable,
            requested=sum_requests(_bound_pod_requests(pod, name) for pod in active),
            pod_count=len(active),
        )


def _interned(shape: tuple) -> tuple[int, tuple]:
    """Equal shapes share one (hash, shape) object, so `place` compares them by identity first."""
    known = _SHAPES.get(shape)
    if known is None:
        if len(_SHAPES) >= _MEMO_LIMIT:
            _SHAPES.clear()  # only sharing is lost: `place` still compares shapes by value
        known = _SHAPES[shape] = (hash(shape), shape)
    return known


def _phase(pod: dict) -> str:
    status = pod.get("status") if isinstance(pod, dict) else None
    return (status or {}).get("phase") or ""


def _bound_pod_requests(pod: dict, node_name: str) -> dict[str, int]:
    try:
        return pod_requests(pod)
    except EngineError as error:
        metadata = pod.get("metadata") or {}
        who = f"{metadata.get('namespace', '')}/{metadata.get('name', '?')}".lstrip("/")
        raise EngineError(
            f"pod {who} on node {node_name}: {error.reason}", field=error.field, value=error.value
        ) from None


@dataclass
class PreparedPod:
    """A pod parsed once: what the filters need, in the units they compare."""

    name: str
    node_name: str
    tolerations: tuple[Toleration, ...]
    node_selector: tuple[tuple[str, str], ...]
    required_affinity: RequiredAffinity | None
    requests: dict[str, int]  # fit-relevant resources only: cpu millicores, others base units
    tolerates_unschedulable: bool = field(init=False)
    _tolerated: dict[tuple[str, str, str], bool] = field(default_factory=dict, init=False, repr=False, compare=False)
    # Affinity outcomes depend only on the values of the labels the pod looks at (and the node name when
    # matchFields are used), and a cluster has few distinct combinations: memoise them.
    _label_keys: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _uses_node_name: bool = field(init=False, repr=False, compare=False)
    _affinity_memo: dict[tuple, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.tolerates_unschedulable = self.tolerates(UNSCHEDULABLE_TAINT)
        keys = [key for key, _ in self.node_selector]
        terms = self.required_affinity.terms if self.required_affinity is not None else ()
        keys += [requirement.key for term in terms for requirement in term.requirements]
        self._label_keys = tuple(dict.fromkeys(keys))
        self._uses_node_name = any(term.fields for term in terms)

    @property
    def label_keys(self) -> tuple[str, ...]:
        """The node labels the pod's nodeSelector and required affinity read: no other label changes its verdict."""
        return self._label_keys

    def tolerates(self, taint: tuple[str, str, str]) -> bool:
        """Memoised per distinct (key, value, effect): thousands of nodes share a handful of taints."""
        known = self._tolerated.get(taint)
        if known is None:
            known = self._tolerated[taint] = any(t.tolerates(*taint) for t in self.tolerations)
        return known


PodSpecView = PreparedPod


def prepare_pod(pod: dict) -> PreparedPod:
    """Parse a Pod manifest (or bare PodSpec) once. Raises EngineError naming the bad value and its path."""
    if isinstance(pod, PreparedPod):
        return pod
    spec = pod_spec(pod)
    metadata = pod.get("metadata") if isinstance(pod.get("metadata"), dict) else {}
    node_name = spec.get("nodeName") or ""
    if not isinstance(node_name, str):
        raise EngineError("nodeName must be a string", field="spec.nodeName", value=repr(node_name))
    exact = exact_pod_requests(spec)
    requests = {
        name: to_scheduler_units(name, exact[name])  # upstream order: cpu, memory, storage, scalars
        for name in sorted(exact, key=_resource_order)
        if is_fit_resource(name)
    }
    return PreparedPod(
        name=str(metadata.get("name") or ""),
        node_name=node_name,
        tolerations=parse_tolerations(spec.get("tolerations"), "spec.tolerations"),
        node_selector=parse_node_selector(spec.get("nodeSelector"), "spec.nodeSelector"),
        required_affinity=compile_required_affinity(spec.get("affinity"), "spec.affinity"),
        requests=requests,
    )


def _resource_order(name: str) -> tuple[int, str]:
    return ({"cpu": 0, "memory": 1, "ephemeral-storage": 2}.get(name, 3), name)


@dataclass(slots=True)
class Verdict:
    node: str
    fits: bool
    reasons: list[str]
    filters: tuple[str, ...] = ()  # names of the failing filter plugins, for code that must not parse prose
    would_be: str = ""  # set for a machine pool's would-be node (scale from zero): what it would be

    def as_dict(self) -> dict:
        data = {
            "node": self.node,
            "fits": self.fits,
            "reasons": list(self.reasons),
            "filters": list(self.filters),
        }
        if self.would_be:
            data["would_be"] = self.would_be
        return data


def evaluate(pod: PreparedPod, node: NodeInfo, *, check_resources: bool = True) -> Verdict:
    """Run every filter (not just up to the first failure) so the reasons are complete."""
    reasons: list[str] = []
    failed: list[str] = []
    if pod.node_name and pod.node_name != node.name:
        reasons.append(f"node(s) didn't match the requested node name: pod asks for {pod.node_name}")
        failed.append(NODE_NAME)
    if node.unschedulable and not pod.tolerates_unschedulable:
        reasons.append("node is cordoned (unschedulable)")
        failed.append(NODE_UNSCHEDULABLE)
    if node.hard_taints:
        untolerated = [taint for taint in node.hard_taints if not pod.tolerates(taint)]
        if untolerated:
            reasons.extend(f"untolerated taint {describe_taint(*taint)}" for taint in untolerated)
            failed.append(TAINT_TOLERATION)
    if pod._label_keys or pod.required_affinity is not None:
        affinity_reasons = _affinity_reasons(pod, node)
        if affinity_reasons:
            reasons += affinity_reasons  # memoised lists are shared: copy their items, never alias them
            failed.append(NODE_AFFINITY)
    if check_resources:
        fit = fit_reasons(pod.requests, node.allocatable, node.requested, node.pod_count)
        if fit:
            reasons += fit
            failed.append(NODE_RESOURCES_FIT)
    return Verdict(node.name, not reasons, reasons, tuple(failed), node.would_be)


def _affinity_reasons(pod: PreparedPod, node: NodeInfo) -> list[str]:
    labels = node.labels
    memo_key = tuple(map(labels.get, pod._label_keys))
    if pod._uses_node_name:
        memo_key += (node.name,)
    reasons = pod._affinity_memo.get(memo_key)
    if reasons is None:
        if len(pod._affinity_memo) >= _MEMO_LIMIT:
            pod._affinity_memo.clear()
        reasons = pod._affinity_memo[memo_key] = _compute_affinity_reasons(pod, labels, node.name)
    return reasons


def _compute_affinity_reasons(pod: PreparedPod, labels: dict[str, str], node_name: str) -> list[str]:
    reasons = []
    for key, wanted in pod.node_selector:
        have = labels.get(key)
        if have != wanted:
            seen = f"node has {have}" if have is not None else f"node has no {key} label"
            reasons.append(f"node(s) didn't match nodeSelector: {key}={wanted} ({seen})")
    affinity = pod.required_affinity
    if affinity is not None and not affinity.matches(labels, node_name):
        reasons.append(f"node(s) didn't match required node affinity: {affinity.explain(labels, node_name)}")
    return reasons


def place(pod: dict | PreparedPod, nodes: Sequence[NodeInfo], *, check_resources: bool = True) -> list[Verdict]:
    """One verdict per node, in the order given, each with its complete reasons.

    Nodes are grouped into equivalence classes: same cordon, same filtering taints, same values of the labels
    the pod looks at and (with resources) the same pod count, allocatable and requested resources. The
    filters run once per class (a 5,000-node cluster has a few dozen to a few hundred); every node gets a copy
    of its class's verdict under its own name. A pod that names a node (nodeName, matchFields) is evaluated
    node by node. `place_each` is the plain per-node path; both give identical verdicts.
    """
    prepared = prepare_pod(pod)
    if prepared.node_name or prepared._uses_node_name:
        return place_each(prepared, nodes, check_resources=check_resources)
    return [
        Verdict(node.name, verdict.fits, list(verdict.reasons), verdict.filters, node.would_be)
        for node, verdict in zip(nodes, _class_verdicts(prepared, nodes, check_resources), strict=True)
    ]


def fits(pod: dict | PreparedPod, nodes: Sequence[NodeInfo], *, check_resources: bool = True) -> list[bool]:
    """`[v.fits for v in place(pod, nodes)]` without building a verdict per node (pool membership)."""
    prepared = prepare_pod(pod)
    if prepared.node_name or prepared._uses_node_name:
        return [verdict.fits for verdict in place_each(prepared, nodes, check_resources=check_resources)]
    return [verdict.fits for verdict in _class_verdicts(prepared, nodes, check_resources)]


def _class_verdicts(prepared: PreparedPod, nodes: Sequence[NodeInfo], check_resources: bool) -> list[Verdict]:
    """Per node, the verdict of its class (evaluated on the class's first node: shared, never to be changed).

    A node's shape is computed at its first placement: a NodeInfo must not change after it (see NodeInfo)."""
    label_keys = prepared._label_keys
    absent = (_ABSENT,) * len(label_keys)
    shape_of = NodeInfo.shape if check_resources else NodeInfo.membership_shape
    classes: dict[tuple, list[tuple[tuple, Verdict]]] = {}
    verdicts = []
    append = verdicts.append
    for node in nodes:
        shape_hash, shape = shape_of(node)
        key = (shape_hash, tuple(map(node.labels.get, label_keys, absent)))  # map(): no Python-level loop
        members = classes.setdefault(key, [])
        for other_shape, verdict in members:
            if other_shape is shape or other_shape == shape:  # interned shapes: usually the same object
                append(verdict)
                break
        else:
            verdict = evaluate(prepared, node, check_resources=check_resources)
            members.append((shape, verdict))
            append(verdict)
    return verdicts


def place_each(pod: dict | PreparedPod, nodes: Sequence[NodeInfo], *, check_resources: bool = True) -> list[Verdict]:
    """The reference path: every filter on every node."""
    prepared = prepare_pod(pod)
    return [evaluate(prepared, node, check_resources=check_resources) for node in nodes]


def nodes_from_kubectl(nodes_json: dict, pods_json: dict | None = None) -> list[NodeInfo]:
    """From `kubectl get nodes -o json` and `kubectl get pods -A -o json`, joining pods on spec.nodeName."""
    by_node: dict[str, list[dict]] = {}
    for pod in _items(pods_json, "pods"):
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and _phase(pod) not in TERMINAL_PHASES:
            by_node.setdefault(node_name, []).append(pod)
    return [
        NodeInfo.from_k8s(node, by_node.get((node.get("metadata") or {}).get("name"), ()))
        for node in _items(nodes_json, "nodes")
    ]


def _items(document: dict | None, what: str) -> list[dict]:
    if document is None:
        return []
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise EngineError(
            f"expected a kubectl {what} list with an `items` array of objects",
            field="items",
            value=type(items).__name__,
        )
    return items
