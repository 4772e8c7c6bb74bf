"""Confinement as pools sees it: every pod the portal creates carries the nodeSelector of the node pool its task
is charged to (docs/quotas.md, "Confinement"), merged in by `confined` (the one function that does it, for the
pods workflows creates and the previews alike). Node pools are quotas', a layer above: quotas installs a
`Confiner` in its AppConfig.ready() that tells, for a pool's platform, the node pool it is charged to and the
selector its pods get, and for a backend's nodes, the node pool each one's labels put it in. With none
installed (pools used alone), nothing is confined and the previews show the platform's own pod.

The offline `placement --pool` command and the admin's pod preview ask it, so they show the constraint the
pods really carry, and why a node outside the node pool would not take the pod.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from portal.json_paths import join_key

CONFINED_ANNOTATION = "pool-portal/node-pool-selector"  # the selector `confined` merged in, as JSON


@dataclass(frozen=True)
class Confinement:
    node_pool: str  # the node pool the platform's tasks are charged to
    node_selector: dict[str, str] = field(default_factory=dict)  # what its pods carry to stay on its nodes

    @property
    def origin(self) -> str:
        return f"added by the portal: node pool {self.node_pool}"

    def provenance(self) -> dict[str, dict]:
        """Provenance entries (pod path → origin) for what `confined` adds to a pod."""
        entries = {join_key("spec.nodeSelector", key): {"source": self.origin} for key in self.node_selector}
        entries[join_key("metadata.annotations", CONFINED_ANNOTATION)] = {"source": self.origin}
        return entries

    def to_dict(self) -> dict:
        return {"node_pool": self.node_pool, "node_selector": dict(self.node_selector)}


class Confiner(Protocol):
    def of_platform(self, pool, platform: str) -> Confinement | None:
        """The confinement of the tasks of `pool` (a Pool) running on its platform named `platform`."""

    def node_pools(self, backend_id: int, labels: dict[str, dict]) -> dict[str, str]:
        """node name → the node pool its labels (`{node: labels}`) put it in; a node none claims is left out."""


_confiner: Confiner | None = None


def install(confiner: Confiner | None) -> Confiner | None:
    """Install `confiner` (None removes it); returns the one it replaces (tests restore it)."""
    global _confiner
    previous, _confiner = _confiner, confiner
    return previous


def of_platform(pool, platform: str) -> Confinement | None:
    return _confiner.of_platform(pool, platform) if _confiner is not None else None


def node_pools(backend_id: int, labels: dict[str, dict]) -> dict[str, str]:
    return _confiner.node_pools(backend_id, labels) if _confiner is not None else {}


def confined(pod: dict, node_selector: dict | None) -> dict:
    """`pod` (changed in place) with the node pool's nodeSelector merged in, its keys winning, and recorded in
    the annotation CONFINED_ANNOTATION so that a retry, resolved afresh, is confined the same way."""
    if node_selector:
        spec = pod.setdefault("spec", {})
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **node_selector}
        metadata = pod.setdefault("metadata", {})
        annotations = metadata.get("annotations") or {}
        metadata["annotations"] = {**annotations, CONFINED_ANNOTATION: json.dumps(node_selector, sort_keys=True)}
    return pod


def carried_selector(fresh: dict, previous: dict) -> dict:
    """`fresh` (a task's next attempt, resolved again: changed in place) confined as the `previous` attempt was:
    the node pool the workflow was charged to still holds it."""
    recorded = ((previous.get("metadata") or {}).get("annotations") or {}).get(CONFINED_ANNOTATION)
    try:
        selector = json.loads(recorded) if recorded else {}
    except ValueError:
        selector = {}
    return confined(fresh, selector if isinstance(selector, dict) else {})


def constraint_reason(confinement: Confinement, node: str, node_pools_of: dict[str, str] | None) -> str:
    """Why the node pool's selector keeps a pod off `node`: with the nodes' node pools known, "node x is in node
    pool y, the task is confined to node pool z"; without, "not in node pool z (…charged to)"."""
    if node_pools_of is None:
        return f"not in node pool {confinement.node_pool} (the node pool this platform is charged to)"
    where = node_pools_of.get(node)
    place = f"in node pool {where}" if where else "in no node pool yet (it carries no node pool's label)"
    return f"node {node} is {place}, the task is confined to node pool {confinement.node_pool}"


def named_reasons(placement: dict, confinement: Confinement | None, node_pools_of: dict[str, str] | None = None):
    """A placement (`{"fits", "rejected": {node: [reason]}}`) whose reasons about the node pool's selector say
    so (`constraint_reason`), changed in place."""
    if confinement is None or not confinement.node_selector:
        return placement
    prefixes = tuple(f"node(s) didn't match nodeSelector: {key}=" for key in confinement.node_selector)
    for node, reasons in placement.get("rejected", {}).items():
        why = constraint_reason(confinement, node, node_pools_of)
        placement["rejected"][node] = [f"{why}: {r}" if r.startswith(prefixes) else r for r in reasons]
    return placement
