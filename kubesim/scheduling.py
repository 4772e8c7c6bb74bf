"""Placement for the simulated kubelet: quantities, taints, affinity, first-fit with caches.

A pod fits a node when the node is Ready, not cordoned (unless tolerated), its NoSchedule and
NoExecute taints are tolerated, ``nodeSelector`` and required node affinity match, and the
requests of the node's bound, non-terminated pods plus this pod's stay within ``allocatable``
(cpu, memory, pods and extended resources such as ``nvidia.com/gpu``). The first fitting node by
name wins; nodes with PreferNoSchedule taints the pod does not tolerate come last. Misfits are
reported, per node, with the first failing check in the default scheduler's filter order.

Scale: pods with equal selector/tolerations/affinity/requests form a signature (an equivalence
class); per signature the scheduler remembers where to resume scanning and that it fits nowhere,
until a node changes or capacity is freed on a node that could take it.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

from .selectors import LabelSelector

if TYPE_CHECKING:
    from .emulator import KubeEmulator

PodKey = tuple[str, str]  # (namespace, name)
PODS, NODES = ("", "pods"), ("", "nodes")
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_END = "\U0010ffff"  # sorts after every node name
_SUFFIXES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?\d+)?)([a-zA-Z]*)$")


def parse_quantity(value: Any) -> float:
    """Kubernetes quantity ("500m", "4Gi", "1e3", 2) in base units."""
    if isinstance(value, (int, float)):
        return float(value)
    m = _QUANTITY.match(str(value).strip())
    if not m or m.group(2) not in ("", *_SUFFIXES):
        raise ValueError(f"invalid quantity {value!r}")
    return float(m.group(1)) * _SUFFIXES.get(m.group(2), 1)


def pod_requests(spec: dict) -> dict[str, float]:
    """Effective requests: sum over containers (requests, else limits), max'ed with each init container."""

    def of(container: dict) -> dict[str, float]:
        res = container.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {k: parse_quantity(v) for k, v in merged.items()}

    total: dict[str, float] = {}
    for c in spec.get("containers") or ():
        for k, v in of(c).items():
            total[k] = total.get(k, 0.0) + v
    for c in spec.get("initContainers") or ():
        for k, v in of(c).items():
            total[k] = max(total.get(k, 0.0), v)
    return total


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    for tol in tolerations or ():
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def affinity_ok(pod_spec: dict, node: dict) -> bool:
    """Required node affinity (nodeSelectorTerms: OR of terms, each an AND of expressions/fields)."""
    required = (
        ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in terms:
        if not term.get("matchExpressions") and not term.get("matchFields"):
            continue
        if LabelSelector.from_match_expressions(None, term.get("matchExpressions")).matches(
            labels
        ) and LabelSelector.from_match_expressions(None, term.get("matchFields")).matches(fields):
            return True
    return False


class NodeInfo:
    """What placement needs from a node, parsed once per node resourceVersion."""

    __slots__ = (
        "node",
        "name",
        "version",
        "labels",
        "ready",
        "unschedulable",
        "hard_taints",
        "soft_taints",
        "allocatable",
        "shape",
    )

    def __init__(self, node: dict) -> None:
        meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
        self.node, self.name, self.version = node, meta["name"], meta.get("resourceVersion")
        self.labels = meta.get("labels") or {}
        self.ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
        self.unschedulable = bool(spec.get("unschedulable"))
        taints = spec.get("taints") or ()
        self.hard_taints = [
            t
            for t in taints
            if t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") != UNSCHEDULABLE_TAINT["key"]
        ]
        self.soft_taints = [t for t in taints if t.get("effect") == "PreferNoSchedule"]
        # What the checks before the selector look at; nodes of one shape fail them alike.
        self.shape = (
            self.ready,
            self.unschedulable,
            tuple((t.get("key"), t.get("value"), t.get("effect")) for t in self.hard_taints),
        )
        self.allocatable: dict[str, float] = {}
        for res, value in (status.get("allocatable") or {}).items():
            with contextlib.suppress(ValueError):
                self.allocatable[res] = parse_quantity(value)


class Scheduler:
    """Tracks node usage from pod events and places pods; runs on the emulator loop only."""

    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self.used: dict[str, dict[str, float]] = {}  # node -> requests of its bound, non-terminated pods
        self._counted: dict[PodKey, tuple[str, dict[str, float]]] = {}
        self._requests: dict[str, dict[str, float]] = {}  # pod uid -> requests
        self._signatures: dict[str, str] = {}  # pod uid -> signature
        self._infos: dict[str, NodeInfo] = {}
        self._nodes: (
            tuple[list[NodeInfo], list[str], dict[tuple[str, str], tuple[list[NodeInfo], list[str]]]] | None
        ) = None
        self._failed: dict[str, tuple[str, dict]] = {}  # signature -> (message, example pod): fits nowhere
        self._cursor: dict[str, str] = {}  # signature -> nodes named before this are known misfits
        self._messages: dict[str, str] = {}  # signature -> last Unschedulable message
        self._shapes: collections.Counter[tuple] = collections.Counter()
        self._extra: dict[str, set[str]] = {}  # signature -> freed nodes before its cursor, to look at first
        self._freed: set[str] = set()  # nodes with capacity released since the last take_freed()

    # -- bookkeeping -----------------------------------------------------------------------
    def requests(self, pod: dict) -> dict[str, float]:
        uid = pod["metadata"]["uid"]
        cached = self._requests.get(uid)
        if cached is None:
            cached = self._requests[uid] = pod_requests(pod.get("spec") or {})
        return cached

    def signature(self, pod: dict) -> str:
        uid = pod["metadata"]["uid"]
        signature = self._signatures.get(uid)
        if signature is None:
            spec = pod.get("spec") or {}
            signature = self._signatures[uid] = json.dumps(
                [
                    spec.get("nodeSelector"),
                    spec.get("tolerations"),
                    spec.get("affinity"),
                    sorted(self.requests(pod).items()),
                ],
                sort_keys=True,
            )
        return signature

    def account(self, key: PodKey, pod: dict | None) -> None:
        """Follow a pod event: keep ``used`` equal to the bound, non-terminated pods' requests."""
        previous = self._counted.pop(key, None)
        if previous is not None:
            used = self.used[previous[0]]
            for res, amount in previous[1].items():
                used[res] -= amount
        node = (pod.get("spec") or {}).get("nodeName") if pod is not None else None
        if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            requests = {**self.requests(pod), "pods": 1.0}
            used = self.used.setdefault(node, {})
            for res, amount in requests.items():
                used[res] = used.get(res, 0.0) + amount
            self._counted[key] = (node, requests)
            if previous is not None and previous[0] != node:
                self._freed.add(previous[0])
        elif previous is not None:
            self._freed.add(previous[0])

    def forget(self, pod: dict) -> None:
        self._requests.pop(pod["metadata"]["uid"], None)
        self._signatures.pop(pod["metadata"]["uid"], None)

    def nodes_changed(self) -> None:
        self._nodes = None
        self._failed.clear()
        self._cursor.clear()
        self._extra.clear()
        self._messages.clear()
        self._freed.clear()

    def take_freed(self) -> set[str]:
        """Signatures that may fit now because capacity was freed since the last call."""
        freed, self._freed = self._freed, set()
        if not freed:
            return set()
        for signature, cursor in self._cursor.items():  # look at freed nodes before resuming the scan
            behind = {name for name in freed if name < cursor}
            if behind:
                self._extra.setdefault(signature, set()).update(behind)
        infos = [info for name in sorted(freed) if (info := self._info_by_name(name)) is not None]
        revived = set()
        for signature, (_, example) in list(self._failed.items()):
            fits = {info.name for info in infos if self.misfit(example, info) is None}
            if fits:
                del self._failed[signature]
                self._extra.setdefault(signature, set()).update(fits)
                revived.add(signature)
        return revived

    # -- placement -------------------------------------------------------------------------
    @staticmethod
    def _shape_misfit(shape: tuple, tolerations: list[dict]) -> str | None:
        ready, unschedulable, taints = shape
        if not ready:
            return "node(s) were not ready"
        if unschedulable and not tolerates(tolerations, UNSCHEDULABLE_TAINT):
            return "node(s) were unschedulable"
        for key, value, effect in taints:
            if not tolerates(tolerations, {"key": key, "value": value, "effect": effect}):
                return f"node(s) had untolerated taint {{{key}{': ' + value if value else ''}}}"
        return None

    def misfit(self, pod: dict, node: NodeInfo) -> str | None:
        """Why ``node`` cannot take ``pod`` (first failing check, in the scheduler's order); None: fits."""
        spec = pod.get("spec") or {}
        tolerations = spec.get("tolerations") or []
        if not node.ready:
            return "node(s) were not ready"
        if node.unschedulable and not tolerates(tolerations, UNSCHEDULABLE_TAINT):
            return "node(s) were unschedulable"
        for taint in node.hard_taints:
            if not tolerates(tolerations, taint):
                value = f": {taint['value']}" if taint.get("value") else ""
                return f"node(s) had untolerated taint {{{taint['key']}{value}}}"
        selector = spec.get("nodeSelector") or {}
        if any(node.labels.get(k) != v for k, v in selector.items()) or not affinity_ok(spec, node.node):
            return "node(s) didn't match Pod's node affinity/selector"
        used = self.used.get(node.name, {})
        for res, amount in (*self.requests(pod).items(), ("pods", 1.0)):
            if amount > 0 and used.get(res, 0.0) + amount > node.allocatable.get(res, 0.0) + 1e-9:
                return "Too many pods" if res == "pods" else f"Insufficient {res}"
        return None

    def place(self, pod: dict) -> tuple[NodeInfo | None, str]:
        """The node to bind ``pod`` to, or None and an Unschedulable message."""
        signature = self.signature(pod)
        if signature in self._failed:
            return None, self._failed[signature][0]
        nodes, candidates_names, index = self._node_table()
        candidates, names = nodes, candidates_names
        for item in ((pod.get("spec") or {}).get("nodeSelector") or {}).items():  # the rarest label narrows
            matching = index.get(item, ([], []))
            if len(matching[0]) < len(candidates):
                candidates, names = matching
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        fallback = None
        extra = self._extra.get(signature)
        for name in sorted(extra or ()):  # freed nodes before the cursor come first in name order
            node = self._info_by_name(name)
            if node is None or self.misfit(pod, node) is not None:
                extra.discard(name)
            elif not any(not tolerates(tolerations, t) for t in node.soft_taints):
                return node, ""
            else:
                fallback = fallback or node
        start = bisect.bisect_left(names, self._cursor[signature]) if signature in self._cursor else 0
        cursor = start
        for i in range(start, len(candidates)):
            node = candidates[i]
            if self.misfit(pod, node) is not None:
                if cursor == i:
                    cursor = i + 1  # stays a misfit until capacity is freed there
                continue
            if not any(not tolerates(tolerations, t) for t in node.soft_taints):
                self._cursor[signature] = candidates[cursor].name
                return node, ""
            fallback = fallback or node
        self._cursor[signature] = candidates[cursor].name if cursor < len(candidates) else _END
        if fallback is not None:
            return fallback, ""
        message = self._messages.get(signature)
        if message is None:  # counting reasons over every node is the costly part: once per signature
            if not nodes:
                message = "no nodes available to schedule pods"
            else:
                # Nodes outside the selector's candidates fail a check before the selector or the
                # selector itself: count them by shape; check the candidates one by one.
                reasons = collections.Counter(self.misfit(pod, node) for node in candidates)
                if candidates is not nodes:
                    outside = self._shapes - collections.Counter(node.shape for node in candidates)
                    for shape, count in outside.items():
                        reason = self._shape_misfit(shape, tolerations)
                        reasons[reason or "node(s) didn't match Pod's node affinity/selector"] += count
                parts = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()) if r)
                message = f"0/{len(nodes)} nodes are available: {parts}."
            self._messages[signature] = message
        self._failed[signature] = (message, pod)
        return None, message

    def _info_by_name(self, name: str) -> NodeInfo | None:
        node = self.emulator._store[NODES].get(("", name))
        return self._info(node) if node is not None else None

    def _info(self, node: dict) -> NodeInfo:
        meta = node["metadata"]
        cached = self._infos.get(meta["name"])
        if cached is None or cached.version != meta.get("resourceVersion"):
            cached = self._infos[meta["name"]] = NodeInfo(node)
        return cached

    def _node_table(self) -> tuple[list[NodeInfo], list[str], dict[tuple[str, str], tuple[list[NodeInfo], list[str]]]]:
        """Nodes by name, their names, and a label index; rebuilt after node changes."""
        if self._nodes is None:
            nodes = sorted((self._info(n) for n in self.emulator._store[NODES].values()), key=lambda n: n.name)
            index: dict[tuple[str, str], tuple[list[NodeInfo], list[str]]] = {}
            for node in nodes:
                for item in node.labels.items():
                    entry = index.setdefault(item, ([], []))
                    entry[0].append(node)
                    entry[1].append(node.name)
            self._nodes = (nodes, [n.name for n in nodes], index)
            self._shapes = collections.Counter(node.shape for node in nodes)
        return self._nodes
